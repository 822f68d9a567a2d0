package artemis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestLocalClusterForwards starts a real cluster of 3 brokers (their
// acceptors on port 29626). Three consumers of one subscription and
// three producers, the driver's clients, take the nodes in turn (one of
// each on every node): every acknowledged message is delivered exactly
// once, and some reach a consumer on another node than their producer's
// (forwarded). With the consumers closed, messages sent then wait in the
// nodes' queues; node 2 is killed (SIGKILL), and a producer that was on
// it sends on another node; node 2 started again rejoins the cluster,
// and a re-read of every node finds each acknowledged message once: a
// node's journal keeps its share through a kill. A send that fails on a busy
// machine is not a fault of the cluster: only acknowledged messages are
// held to account.
func TestLocalClusterForwards(t *testing.T) {
	testbroker.Need(t, "a local Artemis cluster of 3 brokers (Java 17+ and Maven)")
	b, err := testbroker.StartLocal("artemis", 29626, func(c *local.Cluster) { c.Brokers = 3 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c := b.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	connect := func() driver.Driver {
		d, err := New(&workload.DriverConfig{Name: "artemis", Source: "test"}, driver.Options{Endpoints: c.Status().Bootstrap})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := connect()
	defer d.Close()
	topic := "bb-cluster-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		delivered = map[string]int{}
		forwarded int
	)
	var consumers []driver.Consumer
	for node := 1; node <= 3; node++ {
		cons, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "s", Start: driver.StartNew}, func(dl *driver.Delivery) {
			v := string(dl.Value)
			mu.Lock()
			defer mu.Unlock()
			delivered[v]++
			if v[0] != byte('0'+node) {
				forwarded++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		consumers = append(consumers, cons)
	}
	acked := produce(ctx, t, d, topic, "first", 300)
	deadline := time.Now().Add(time.Minute)
	for missing := acked; len(missing) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		missing = missingOf(missing, delivered)
		mu.Unlock()
	}
	for _, cons := range consumers {
		cons.Close()
	}
	mu.Lock()
	for _, v := range acked {
		if n := delivered[v]; n != 1 {
			t.Errorf("acknowledged message %s delivered %d times; want once", v, n)
		}
	}
	t.Logf("%d messages acknowledged, %d delivered, %d of them on another node than their producer's", len(acked), len(delivered), forwarded)
	if forwarded == 0 {
		t.Error("no message reached a consumer on another node than its producer's: the nodes do not forward")
	}
	mu.Unlock()

	waiting := produce(ctx, t, d, topic, "second", 60)
	waiting = append(waiting, moveOffKilled(ctx, t, d, c, topic)...)
	if err := c.Restart(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for err := (Kind{}).Ready(ctx, c); err != nil; err = (Kind{}).Ready(ctx, c) {
		if ctx.Err() != nil {
			t.Fatalf("node 2 did not rejoin the cluster after a kill: %v", err)
		}
		time.Sleep(time.Second)
	}
	found := map[string]int{}
	if err := d.(driver.Rereader).Reread(ctx, topic, "s", func(v []byte) { found[string(v)]++ }); err != nil {
		t.Fatalf("re-read after node 2's restart: %v", err)
	}
	for _, v := range waiting {
		if found[v] != 1 {
			t.Errorf("acknowledged message %s found %d times in the queues after node 2's restart; want once", v, found[v])
		}
	}
}

// moveOffKilled kills node 2 of c under a producer of d connected to it,
// which sends until a message is acknowledged (it has moved to another
// node), and returns the acknowledged ones.
func moveOffKilled(ctx context.Context, t *testing.T, d driver.Driver, c *local.Cluster, topic string) []string {
	t.Helper()
	var (
		mu    sync.Mutex
		acked []string
	)
	spec := driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: 1000}
	// The driver's clients take the nodes in turn: 9 so far.
	onOne, err := d.NewProducer(ctx, spec, func(*driver.Message, error) {})
	if err != nil {
		t.Fatal(err)
	}
	onOne.Close()
	onTwo, err := d.NewProducer(ctx, spec, func(m *driver.Message, err error) {
		if err == nil {
			mu.Lock()
			acked = append(acked, string(m.Value))
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer onTwo.Close()
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		mu.Lock()
		moved := len(acked) > 0
		mu.Unlock()
		if moved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a producer on node 2, killed, did not send on another node within a minute")
		}
		onTwo.Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "2-moved-%d", i)})
		time.Sleep(100 * time.Millisecond)
	}
	if err := onTwo.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return acked
}

// produce sends n messages from each of three producers of d to topic,
// valued "NODE-round-SEQ" (the driver's clients take the nodes in turn),
// and returns those acknowledged.
func produce(ctx context.Context, t *testing.T, d driver.Driver, topic, round string, n int) []string {
	t.Helper()
	var (
		mu    sync.Mutex
		acked []string
	)
	for node := 1; node <= 3; node++ {
		p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, func(m *driver.Message, err error) {
			if err == nil {
				mu.Lock()
				acked = append(acked, string(m.Value))
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			p.Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "%d-%s-%d", node, round, i)})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatalf("no message of the %s round was acknowledged", round)
	}
	return acked
}

// missingOf returns the values of want not in got.
func missingOf(want []string, got map[string]int) []string {
	var missing []string
	for _, v := range want {
		if got[v] == 0 {
			missing = append(missing, v)
		}
	}
	return missing
}
