package nats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// server is the nats server the tests start, on a port of their own, when the
// first test that needs it asks.
var server = testbroker.NewLazyLocal("nats", 29422)

func TestMain(m *testing.M) { server.Main(m) }

func newDriver(t *testing.T, dc *workload.DriverConfig) driver.Driver {
	t.Helper()
	d, err := New(dc, driver.Options{Endpoints: []string{"nats://" + server.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConformance: the NATS JetStream driver passes the driver contract's
// conformance suite against a real nats-server.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "nats", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver {
			return newDriver(t, &workload.DriverConfig{Name: "nats", Source: "test", ReplicationFactor: 1})
		},
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "nats", Source: "test"}, driver.Options{Endpoints: []string{"nats://127.0.0.1:1"}})
		},
	})
}

// TestOMBDriverFile: OMB's NATS driver file names the server with
// natsHostUrl; unknown settings are refused with their line.
func TestOMBDriverFile(t *testing.T) {
	dc, err := workload.ParseDriver("nats.yaml", []byte("name: NATS\ndriverClass: io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver\nnatsHostUrl: nats://"+server.Get(t).Addr+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(dc, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "NATS Server 2.") {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
	_, err = New(&workload.DriverConfig{Name: "nats", Source: "d.yaml", Producer: workload.Properties{{Key: "maxPendng", Value: "5", File: "d.yaml", Line: 3}}}, driver.Options{})
	if err == nil || !strings.Contains(err.Error(), "d.yaml:3") || !strings.Contains(err.Error(), `did you mean "maxPending"`) {
		t.Errorf("a misspelled setting: %v", err)
	}
}

// TestOMBNatsConfigFields: every field of OMB's NatsConfig is read and
// honoured: storageType sets the streams' storage over the topic
// section's, maxBytes their size limit; a bad value is refused with its
// line.
func TestOMBNatsConfigFields(t *testing.T) {
	dc, err := workload.LoadDriver("testdata/omb-nats-memory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseConfig(dc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.storage != jetstream.MemoryStorage || c.maxBytes != 1<<30 || c.servers != "localhost:4222" || dc.ReplicationFactor != 1 {
		t.Errorf("storage %v, maxBytes %d, servers %q, replication %d", c.storage, c.maxBytes, c.servers, dc.ReplicationFactor)
	}
	// The results record them, beside the servers connected to.
	for key, want := range map[string]string{"storageType": "Memory", "maxBytes": "1073741824", "servers": "localhost:4222"} {
		if v, _ := c.effective["common"].Get(key); v != want {
			t.Errorf("effective common %s = %q, want %q (%v)", key, v, want, c.effective["common"])
		}
	}
	secret := &workload.DriverConfig{Name: "nats", Common: workload.Properties{{Key: "user", Value: "u"}, {Key: "password", Value: "hunter2-secret"},
		{Key: "servers", Value: "nats://u:hunter2-secret@h:4222"}}}
	if c, err := parseConfig(secret, nil, nil); err != nil || strings.Contains(fmt.Sprint(c.effective), "hunter2") {
		t.Errorf("a password reaches the effective settings: %v, %v", c.effective, err)
	}
	if c, err := parseConfig(&workload.DriverConfig{Name: "nats"}, nil, nil); err != nil || c.storage != jetstream.FileStorage || c.maxBytes != -1 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	for _, bad := range []string{"storageType: Disk\n", "maxBytes: 0\n", "maxBytes: -2\n"} {
		dc, err := workload.ParseDriver("nats.yaml", []byte("name: NATS\ndriverClass: io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver\n"+bad))
		if err == nil {
			_, err = parseConfig(dc, nil, nil)
		}
		if err == nil || !strings.Contains(err.Error(), "nats.yaml:3") {
			t.Errorf("%q: %v, want an error naming nats.yaml:3", bad, err)
		}
	}
}

// TestPullLimit: a consumer pulls up to 16 MiB ahead by default, and
// fetchBatch messages when it is set; a bad value is refused.
func TestPullLimit(t *testing.T) {
	c, err := parseConfig(&workload.DriverConfig{Name: "nats"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.pullLimit().(jetstream.PullMaxBytes); !ok || got != 16<<20 {
		t.Errorf("default pull limit %#v, want PullMaxBytes(16 MiB)", c.pullLimit())
	}
	dc := &workload.DriverConfig{Name: "nats", Consumer: workload.Properties{{Key: "fetchBatch", Value: "8000"}}}
	if c, err = parseConfig(dc, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.pullLimit().(jetstream.PullMaxMessages); !ok || got != 8000 {
		t.Errorf("with fetchBatch 8000: pull limit %#v, want PullMaxMessages(8000)", c.pullLimit())
	}
	for _, bad := range []string{"fetchBatch", "fetchMaxBytes"} {
		dc := &workload.DriverConfig{Name: "nats", Consumer: workload.Properties{{Key: bad, Value: "0"}}}
		if _, err := parseConfig(dc, nil, nil); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: 0: %v, want an error naming it", bad, err)
		}
	}
}

// TestProducerWaitsForRoom: a producer whose maxPending publishes await
// their acks makes the next send wait for room, however long the server
// takes to ack, rather than fail it (nats.go fails a publish it stalls
// for 200 ms); no more than maxPending are ever in flight.
func TestProducerWaitsForRoom(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, topic, proxy := proxiedTopic(ctx, t, "maxPending", "4")
	const n = 40
	var (
		mu             sync.Mutex
		inFlight, most int
		acked          = make(chan struct{}, n)
	)
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 100, MaxInFlight: n}, func(m *driver.Message, err error) {
		mu.Lock()
		inFlight--
		if err != nil {
			t.Errorf("message %d failed: %v", m.Slot, err)
		}
		mu.Unlock()
		acked <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	proxy.pause(true) // the server's acks are held back
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range n {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			p.Send(ctx, &driver.Message{Slot: i, Value: []byte("x")})
		}
	}()
	time.Sleep(600 * time.Millisecond) // three times nats.go's stall wait
	proxy.pause(false)
	<-sent
	for range n {
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatal("not every message was acknowledged")
		}
	}
	// The sender counts a message in flight before its Send, so it may
	// count one more than the producer holds.
	if most > 4+1 {
		t.Errorf("%d messages in flight at once; want at most maxPending, 4", most-1)
	}
}

// TestProducerAckTimeout: a publish the server does not ack within
// ackTimeoutMs fails as TIMEOUT, once; its late ack settles nothing
// else, and the producer goes on.
func TestProducerAckTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, topic, proxy := proxiedTopic(ctx, t, "ackTimeoutMs", "300")
	outcomes := make(chan error, 100)
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 100, MaxInFlight: 100}, func(_ *driver.Message, err error) {
		outcomes <- err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := make([]*driver.Message, 5)
	proxy.pause(true)
	start := time.Now()
	for i := range msgs {
		msgs[i] = &driver.Message{Value: []byte("held")}
		p.Send(ctx, msgs[i])
	}
	for range msgs {
		err := <-outcomes
		var k interface{ Kind() string }
		if !errors.As(err, &k) || k.Kind() != "TIMEOUT" {
			t.Fatalf("a publish the server did not ack: %v; want a TIMEOUT", err)
		}
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("publishes timed out after %v; want at least ackTimeoutMs, 300 ms", waited)
	}
	proxy.pause(false) // the late acks come
	for _, m := range msgs {
		p.Send(ctx, m)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for range msgs {
		if err := <-outcomes; err != nil {
			t.Errorf("a publish after the timeouts: %v", err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(outcomes); n != 0 {
		t.Errorf("%d more outcomes than messages", n)
	}
}

// proxiedTopic returns a driver with the producer setting key: value,
// which reaches the test server through a pausingProxy, and a new
// stream of one subject, deleted when the test ends.
func proxiedTopic(ctx context.Context, t *testing.T, key, value string) (driver.Driver, string, *pausingProxy) {
	t.Helper()
	proxy := newPausingProxy(t, server.Get(t).Addr)
	dc := &workload.DriverConfig{Name: "nats", Source: "test", ReplicationFactor: 1,
		Producer: workload.Properties{{Key: key, Value: value}}}
	d, err := New(dc, driver.Options{Endpoints: []string{"nats://" + proxy.addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	topic := fmt.Sprintf("bb-%s-%d", key, time.Now().UnixNano())
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.DeleteTopic(context.Background(), topic) })
	return d, topic, proxy
}

// pausingProxy forwards one TCP connection after another to a server,
// and can hold back what the server sends.
type pausingProxy struct {
	addr   string
	mu     sync.Mutex
	paused bool
	resume *sync.Cond
}

func newPausingProxy(t *testing.T, target string) *pausingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &pausingProxy{addr: ln.Addr().String()}
	px.resume = sync.NewCond(&px.mu)
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		px.pause(false)
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); io.Copy(s, c); s.Close() }()
			go func() { defer conns.Done(); px.copyFromServer(c, s); c.Close() }()
		}
	}()
	return px
}

func (px *pausingProxy) pause(on bool) {
	px.mu.Lock()
	px.paused = on
	px.mu.Unlock()
	px.resume.Broadcast()
}

func (px *pausingProxy) copyFromServer(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		px.mu.Lock()
		for px.paused {
			px.resume.Wait()
		}
		px.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestOMBDriverFileRuns: OMB's driver-nats/nats.yaml, unchanged, runs
// OMB's workload from OMB's layout on a local cluster of 3 nodes (the
// file asks for 3 replicas; nodes' client ports on 29430), whose
// addresses replace the file's natsHostUrl.
func TestOMBDriverFileRuns(t *testing.T) {
	testbroker.Need(t, "a local NATS cluster of 3 nodes (nats-server)")
	b, err := testbroker.StartLocal("nats", 29430, func(c *local.Cluster) { c.Brokers = 3 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	omblayout.Run(t, "driver-nats/nats.yaml", omblayout.Target{LocalPort: b.Cluster.Port, Brokers: 3, StateDir: b.Cluster.StateDir})
}

// TestRing: messages settled out of order leave the queue only when
// every older one has been settled, so that a slot is freed once no
// older message holds the ring's room; a settled message is not found
// again, and a nats.Msg sent anew is found in its new place.
func TestRing(t *testing.T) {
	r := ring{items: make([]sent, 3)}
	a, b, c := &nats.Msg{}, &nats.Msg{}, &nats.Msg{}
	for _, msg := range []*nats.Msg{a, b, c} {
		r.push(sent{msg: msg, m: &driver.Message{}})
	}
	r.find(b).m = nil
	if r.find(b) != nil {
		t.Error("a settled message is found again")
	}
	if n := r.popSettled(); n != 0 || r.n != 3 {
		t.Errorf("the second settled: %d taken out, %d left; want 0 and 3", n, r.n)
	}
	r.find(a).m = nil
	if n := r.popSettled(); n != 2 || r.n != 1 {
		t.Errorf("the first settled too: %d taken out, %d left; want 2 and 1", n, r.n)
	}
	r.push(sent{msg: a, m: &driver.Message{Slot: 7}}) // a sent again, past the array's end
	r.find(c).m = nil
	if s := r.find(a); s == nil || s.m.Slot != 7 {
		t.Fatalf("a sent again: found %+v", s)
	}
	if n := r.popSettled(); n != 1 || r.at(0).msg != a {
		t.Errorf("after c: %d taken out, head %p; want 1 and a", n, r.at(0).msg)
	}
}
