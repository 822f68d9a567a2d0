package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/localfaults"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// fakeRemoting serves the remoting protocol on host, answering each
// request with what answer returns (its code, fields and body; the
// opaque id and response flag are set), until the test ends. It
// returns its address.
func fakeRemoting(t *testing.T, host string, answer func(req *command) *command) string {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				for {
					req, err := readFrame(conn)
					if err != nil {
						return
					}
					resp := answer(req)
					resp.Opaque, resp.Flag = req.Opaque, responseFlag
					frame, _ := encodeFrame(resp)
					if _, err := conn.Write(frame); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestTopicsOnEveryBrokerAndPlacement: against a name server routing a
// cluster of 3 brokers, a topic is created on each of them; its written
// count is the sum over all of them, and an error once one of them is
// no longer routed; the broker
// holding a queue is the master of the queue's broker in the topic's
// route, the queues counted in order of broker name, then queue id,
// whatever order the route lists them in; a queue the topic does not
// have is an error, and a cluster of masters has no controller.
func TestTopicsOnEveryBrokerAndPlacement(t *testing.T) {
	var mu sync.Mutex
	created := map[string]string{} // broker name: the queues asked for
	brokerAddrs := map[string]string{}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("broker-%d", i)
		brokerAddrs[name] = fakeRemoting(t, fmt.Sprintf("127.0.1.%d", i), func(req *command) *command {
			switch {
			case req.ExtFields["topic"] != "t":
			case req.Code == codeUpdateAndCreateTopic:
				mu.Lock()
				defer mu.Unlock()
				created[name] = req.ExtFields["writeQueueNums"]
				return &command{}
			case req.Code == codeGetMaxOffset:
				return &command{ExtFields: map[string]string{"offset": "5"}}
			}
			return &command{Code: 1, Remark: fmt.Sprintf("unexpected request %d %v", req.Code, req.ExtFields)}
		})
	}
	route := func(brokers ...string) []byte {
		var r topicRoute
		for _, b := range brokers {
			r.BrokerDatas = append(r.BrokerDatas, struct {
				Cluster     string            `json:"cluster"`
				BrokerName  string            `json:"brokerName"`
				BrokerAddrs map[string]string `json:"brokerAddrs"`
			}{clusterName, b, map[string]string{"0": brokerAddrs[b]}})
			r.QueueDatas = append(r.QueueDatas, struct {
				BrokerName     string `json:"brokerName"`
				ReadQueueNums  int    `json:"readQueueNums"`
				WriteQueueNums int    `json:"writeQueueNums"`
			}{b, 2, 2})
		}
		body, _ := json.Marshal(r)
		return body
	}
	var broker2Down atomic.Bool // the name server no longer routes to broker-2
	namesrv := fakeRemoting(t, "127.0.0.1", func(req *command) *command {
		switch {
		case req.Code != codeGetRouteInfoByTopic:
			return &command{Code: 1, Remark: "unexpected request"}
		case req.ExtFields["topic"] == clusterName:
			return &command{Body: route("broker-2", "broker-1", "broker-3")}
		case req.ExtFields["topic"] == "t" && broker2Down.Load():
			return &command{Body: route("broker-3", "broker-1")}
		case req.ExtFields["topic"] == "t":
			return &command{Body: route("broker-3", "broker-1", "broker-2")}
		}
		return &command{Code: respTopicNotExist, Remark: "no route"}
	})
	d, err := New(&workload.DriverConfig{Name: "rocketmq", Source: "test", ReplicationFactor: 1},
		driver.Options{Endpoints: []string{"127.0.0.1:1", namesrvScheme + namesrv}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"broker-1": "2", "broker-2": "2", "broker-3": "2"}; fmt.Sprint(created) != fmt.Sprint(want) {
		t.Errorf("queues created by broker: %v, want %v", created, want)
	}

	place := d.(driver.HostPlacement)
	for partition, want := range []string{"127.0.1.1", "127.0.1.1", "127.0.1.2", "127.0.1.2", "127.0.1.3", "127.0.1.3"} {
		if got, err := place.LeaderHost(ctx, "t", partition); err != nil || got != want {
			t.Errorf("LeaderHost(t, %d) = %q, %v; want %s", partition, got, err, want)
		}
	}
	for _, tc := range []struct {
		topic     string
		partition int
	}{{"t", 6}, {"t", -1}, {"missing", 0}} {
		if got, err := place.LeaderHost(ctx, tc.topic, tc.partition); err == nil {
			t.Errorf("LeaderHost(%s, %d) = %q; want an error", tc.topic, tc.partition, got)
		}
	}
	if got, err := place.ControllerHost(ctx); !errors.Is(err, errNoController) {
		t.Errorf("ControllerHost = %q, %v; want errNoController", got, err)
	}

	// The written count is every broker's; with a broker of the topic no
	// longer routed, there is none rather than the others'.
	wc := d.(driver.WrittenCounter)
	if n, err := wc.Written(ctx, "t"); err != nil || n != 6*5 {
		t.Errorf("Written = %d, %v; want 30: 6 queues of 5 messages", n, err)
	}
	broker2Down.Store(true)
	if n, err := wc.Written(ctx, "t"); err == nil || !strings.Contains(err.Error(), "broker-2") {
		t.Errorf("Written with broker-2 not routed = %d, %v; want an error naming broker-2", n, err)
	}
}

// TestLocalClusterOfThree starts a real cluster of 3 brokers behind one
// proxy (its gRPC endpoint on port 29091): a topic has its queues on
// every broker, messages sent through the proxy are stored on each and
// consumed from each; a fault aimed at the leader of partition 0 finds
// broker node 1; and a broker killed, as a node fault kills it, is
// started again and stores messages again. Sends while it is down may
// fail or not, as the proxy's routes catch up: that is not checked.
func TestLocalClusterOfThree(t *testing.T) {
	testbroker.Need(t, "a local RocketMQ cluster of 3 brokers (Java 17+ and Maven)")
	if raceDetector {
		t.Skip("the RocketMQ Go client v5.1.2 has data races of its own: run without -race")
	}
	began := time.Now()
	b, err := testbroker.StartLocal("rocketmq", 29091, func(c *local.Cluster) { c.Brokers = 3 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c := b.Cluster
	t.Logf("3 brokers, their name server and proxy ready after %s", time.Since(began).Round(100*time.Millisecond))
	if st := c.Status(); !st.Running || len(st.Nodes) != 5 || len(st.Bootstrap) != 1 {
		t.Fatalf("status %+v: want the name server, 3 brokers and the proxy running, the proxy the one address", st)
	}
	d, err := New(&workload.DriverConfig{Name: "rocketmq", Source: "test", ReplicationFactor: 1, Common: props("test", "requestTimeoutMs", "30000")},
		driver.Options{Endpoints: LocalKind.Endpoints(c.Status(), "")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topic := "bb-cluster-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	defer d.DeleteTopic(ctx, topic)
	adm := d.(*Driver).admin
	r, err := adm.route(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	qs := r.queues()
	var names []string
	for _, q := range qs {
		names = append(names, q.broker)
	}
	if want := []string{"broker-1", "broker-1", "broker-2", "broker-2", "broker-3", "broker-3"}; !slices.Equal(names, want) {
		t.Fatalf("the topic's queues are on %v, want 2 on each broker", names)
	}

	// Messages through the proxy land on every broker, and come back.
	const n = 300
	if acked := produce(ctx, t, d, topic, n); acked != n {
		t.Fatalf("%d of %d messages acknowledged on a healthy cluster", acked, n)
	}
	stored := storedByBroker(ctx, t, adm, topic)
	for _, name := range []string{"broker-1", "broker-2", "broker-3"} {
		if stored[name] == 0 {
			t.Errorf("broker %s stored none of %d messages: %v", name, n, stored)
		}
	}
	var received atomic.Int64
	cons, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "s", Start: driver.StartEarliest}, func(*driver.Delivery) { received.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	for received.Load() < n && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	cons.Close()
	if received.Load() < n {
		t.Errorf("%d of %d messages consumed", received.Load(), n)
	}

	finder := localfaults.ByHost(c.Nodes(), d.(driver.HostPlacement))
	if id, err := finder.Leader(ctx, topic, 0); err != nil || id != 1 {
		t.Errorf("the leader of partition 0 is node %d, %v; want broker node 1", id, err)
	}

	// Broker node 2 killed, then started again: it stores messages again.
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("with broker node 2 killed, %d of 100 sends acknowledged", produce(ctx, t, d, topic, 100))
	restarted := time.Now()
	if err := c.Restart(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Up(ctx); err != nil { // the cluster as it is: waits until it is ready
		t.Fatal(err)
	}
	t.Logf("node 2 started again: the cluster was ready after %s", time.Since(restarted).Round(100*time.Millisecond))
	before := storedByBroker(ctx, t, adm, topic)["broker-2"]
	for storedByBroker(ctx, t, adm, topic)["broker-2"] == before {
		if ctx.Err() != nil {
			t.Fatalf("broker 2, started again, stored nothing more within the test's time")
		}
		produce(ctx, t, d, topic, 30)
	}
}

// produce sends n messages to topic and returns how many were
// acknowledged.
func produce(ctx context.Context, t *testing.T, d driver.Driver, topic string, n int) int {
	t.Helper()
	var acked atomic.Int64
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, func(_ *driver.Message, err error) {
		if err == nil {
			acked.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p.Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "message %d", i)})
	}
	_ = p.Flush(ctx)
	p.Close()
	return int(acked.Load())
}

// storedByBroker returns how many messages each broker of the topic's
// route stored: the sum of its queues' maximum offsets.
func storedByBroker(ctx context.Context, t *testing.T, a *admin, topic string) map[string]int64 {
	t.Helper()
	r, err := a.route(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	for _, q := range r.queues() {
		n, err := a.offset(ctx, topic, q, false)
		if err != nil {
			t.Fatal(err)
		}
		stored[q.broker] += n
	}
	return stored
}
