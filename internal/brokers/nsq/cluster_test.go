package nsq

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestLocalCluster3 starts a real cluster of 3 nsqd and nsqlookupd (the
// nsqd TCP ports on 29170): the driver, given the cluster's endpoints,
// passes the conformance suite; its producers publish to one nsqd each,
// round-robin, and a consumer that found the nsqd nodes through
// nsqlookupd receives every message of all three, as many as the
// written count sums; with one nsqd killed, the others keep serving;
// started again, it registers with nsqlookupd again, the consumer finds
// it again, and its producer publishes to it again.
func TestLocalCluster3(t *testing.T) {
	testbroker.Need(t, "a local NSQ cluster of 3 nsqd and nsqlookupd (the Go toolchain)")
	b, err := testbroker.StartLocal("nsq", 29170, func(c *local.Cluster) { c.Brokers = 3 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c := b.Cluster
	st := c.Status()
	if !st.Running || len(st.Nodes) != 4 || len(st.Bootstrap) != 3 {
		t.Fatalf("status %+v: want nsqlookupd and 3 nsqd running", st)
	}
	endpoints := LocalKind.Endpoints(st, "http")
	connect := func(t *testing.T) driver.Driver {
		d, err := New(&workload.DriverConfig{Name: "nsq", Source: "test", ReplicationFactor: 1}, driver.Options{Endpoints: endpoints})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Run("Conformance", func(t *testing.T) {
		brokertest.Run(t, "nsq", drivertest.Target{Connect: connect,
			Unreachable: func(*testing.T) (driver.Driver, error) {
				return New(&workload.DriverConfig{Name: "nsq", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1", "nsqlookupd://127.0.0.1:2"}})
			},
		})
	})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := connect(t).(*Driver)
	defer d.Close()
	const topic = "bb-cluster"
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	got := newReceived()
	cons, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "all"}, got.consume)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if err := cons.Ready(ctx); err != nil {
		t.Fatalf("the consumer did not reach the 3 nsqd through nsqlookupd: %v", err)
	}
	acks := &acked{}
	producers := make([]driver.Producer, 3)
	for i := range producers {
		if producers[i], err = d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxInFlight: 100}, acks.ack); err != nil {
			t.Fatal(err)
		}
		defer producers[i].Close()
	}
	// send sends n messages on each producer of ids (node i+1's) and
	// waits until each is acknowledged or failed.
	send := func(round string, n int, ids ...int) {
		t.Helper()
		for _, i := range ids {
			for j := range n {
				producers[i].Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "%s-%d-%d", round, i+1, j)})
			}
		}
		for _, i := range ids {
			if err := producers[i].Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("a", 100, 0, 1, 2)
	if ok, failed := acks.counts(); ok != 300 || failed != 0 {
		t.Fatalf("%d acknowledged and %d failed of 300 sent to 3 running nsqd", ok, failed)
	}
	for i, n := range d.nodes {
		var st stats
		if err := d.call(ctx, n.httpAddr, http.MethodGet, "/stats", url.Values{"format": {"json"}, "topic": {topic}}, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Topics) != 1 || st.Topics[0].MessageCount != 100 {
			t.Errorf("nsqd %d holds %+v: want the 100 messages of one producer", i+1, st.Topics)
		}
	}
	got.wait(t, ctx, "a", 300)
	if w, err := d.Written(ctx, topic); err != nil || w != 300 {
		t.Errorf("written %d, %v: want 300, summed over the nsqd nodes", w, err)
	}

	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	send("b", 100, 0, 2)
	if ok, failed := acks.counts(); ok != 500 || failed != 0 {
		t.Errorf("with nsqd 2 killed, %d acknowledged and %d failed of 500 sent to the running ones", ok, failed)
	}
	got.wait(t, ctx, "b", 200)

	if err := c.Restart(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, func(ctx context.Context) error { return (Kind{}).Ready(ctx, c) }); err != nil {
		t.Fatalf("nsqd 2 started again did not register with nsqlookupd: %v", err)
	}
	if err := cons.Ready(ctx); err != nil {
		t.Fatalf("the consumer did not find nsqd 2 again through nsqlookupd: %v", err)
	}
	// go-nsq's producer connects again on its first publish after the
	// connection was lost.
	if raceDetector {
		t.Log("go-nsq v1.1.0's producer races with its own router goroutine when it connects again (producer.go:308 against :366): the reconnection is checked without -race")
		return
	}
	send("c", 100, 1)
	if ok, failed := acks.counts(); ok != 600 || failed != 0 {
		t.Errorf("nsqd 2 started again: %d acknowledged and %d failed of 600 sent", ok, failed)
	}
	got.wait(t, ctx, "c", 100)
}

// waitFor calls ready every 250 ms until it returns nil or ctx ends.
func waitFor(ctx context.Context, ready func(context.Context) error) error {
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// acked counts a producer's acknowledgements and failures.
type acked struct {
	mu         sync.Mutex
	ok, failed int
}

func (a *acked) ack(_ *driver.Message, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed++
	} else {
		a.ok++
	}
}

func (a *acked) counts() (ok, failed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ok, a.failed
}

// received is the set of values a consumer received.
type received struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newReceived() *received { return &received{seen: map[string]bool{}} }

func (r *received) consume(d *driver.Delivery) {
	r.mu.Lock()
	r.seen[string(d.Value)] = true
	r.mu.Unlock()
}

// wait waits until n different values starting with round have been
// received, failing t after ctx ends.
func (r *received) wait(t *testing.T, ctx context.Context, round string, n int) {
	t.Helper()
	count := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		k := 0
		for v := range r.seen {
			if len(v) > len(round) && v[:len(round)+1] == round+"-" {
				k++
			}
		}
		return k
	}
	for count() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("received %d of the %d messages of round %s", count(), n, round)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
