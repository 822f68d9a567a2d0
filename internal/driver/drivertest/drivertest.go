// Package drivertest is the conformance suite of the driver contract: the
// behaviour the runner relies on, checked on a driver connected to its
// real broker through the driver's interfaces alone. Every broker's tests
// run it through package brokers/brokertest, which adds whole runs
// through the runner; the in-memory reference driver passes both.
package drivertest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// Target is the driver under test.
type Target struct {
	// Connect returns a new driver connected to the broker under test;
	// the suite closes it.
	Connect func(t *testing.T) driver.Driver
	// Unreachable returns a driver configured for an address where no
	// broker answers; nil skips that case.
	Unreachable func(t *testing.T) (driver.Driver, error)
	// Capabilities are the driver's, as its broker's module declares
	// them (brokertest.Run fills them in).
	Capabilities driver.Capabilities
	// Bound limits every wait of the suite (default DefaultBound).
	Bound time.Duration
}

// DefaultBound is a Target's Bound when it gives none: a re-read of a
// RabbitMQ quorum queue took more than 30 s at a load average of 12, and
// how fast is not what the suite tests.
const DefaultBound = 60 * time.Second

// Run runs every case of the suite against tg, each as a subtest.
func Run(t *testing.T, tg Target) {
	if tg.Bound == 0 {
		tg.Bound = DefaultBound
	}
	cases := []struct {
		name string
		run  func(*testing.T, Target)
	}{
		{"TopicLifecycle", topicLifecycle},
		{"RoundTrip", roundTrip},
		{"AckOnceOnClose", ackOnceOnClose},
		{"ManyProducersAndConsumers", manyProducersAndConsumers},
		{"PauseResume", pauseResume},
		{"SlowConsumer", slowConsumer},
		{"Unreachable", unreachable},
		{"RereadHoldsWhatNoConsumerTook", rereadHolds},
		{"CapabilitiesAsDeclared", capabilitiesAsDeclared},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, tg) })
	}
}

var topicSeq atomic.Int64

// newTopic creates a fresh topic for one case and deletes it afterwards.
func newTopic(t *testing.T, tg Target, d driver.Driver) (string, int) {
	t.Helper()
	name := fmt.Sprintf("bb-conformance-%d-%d", time.Now().UnixNano(), topicSeq.Add(1))
	parts := 1
	if tg.Capabilities.Partitions {
		parts = 3
	}
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: name, Partitions: parts, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
		defer cancel()
		_ = d.DeleteTopic(ctx, name)
	})
	return name, parts
}

// Connect returns a new driver connected to the broker under test,
// closed when the test ends.
func Connect(t *testing.T, tg Target) driver.Driver {
	t.Helper()
	d := tg.Connect(t)
	t.Cleanup(d.Close)
	return d
}

// acks counts the acknowledgements of each message, by its index in the
// message's first 8 bytes.
type acks struct {
	mu     sync.Mutex
	count  map[uint64]int
	failed int
	active int32 // calls in progress, to catch concurrent calls
	errs   []string
}

func newAcks() *acks { return &acks{count: map[uint64]int{}} }

func (a *acks) fn(m *driver.Message, err error) {
	if atomic.AddInt32(&a.active, 1) > 1 {
		a.mu.Lock()
		a.errs = append(a.errs, "AckFunc called concurrently for one producer")
		a.mu.Unlock()
	}
	defer atomic.AddInt32(&a.active, -1)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count[binary.BigEndian.Uint64(m.Value)]++
	if err != nil {
		a.failed++
	}
}

func (a *acks) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.count {
		n += c
	}
	return n
}

// message returns message i: its index in the first 8 bytes of a 64-byte
// value, which every message owns (the contract lets the driver keep it
// until its ack).
func message(i uint64) *driver.Message {
	v := make([]byte, 64)
	binary.BigEndian.PutUint64(v, i)
	return &driver.Message{Value: v}
}

// received records deliveries by message index.
type received struct {
	mu    sync.Mutex
	count map[uint64]int
	lanes map[int32]bool
}

func newReceived() *received { return &received{count: map[uint64]int{}, lanes: map[int32]bool{}} }

func (r *received) fn(d *driver.Delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(d.Value) >= 8 {
		r.count[binary.BigEndian.Uint64(d.Value)]++
	}
	r.lanes[d.Lane] = true
}

func (r *received) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.count)
}

// subscribe starts a consumer of topic for subscription, from the
// earliest message, recording into got; it returns once the consumer is
// ready, and closes it when the test ends.
func subscribe(ctx context.Context, t *testing.T, d driver.Driver, topic, subscription string, got *received) driver.Consumer {
	t.Helper()
	c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: subscription, Start: driver.StartEarliest}, got.fn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls cond until it holds or bound passes.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// topicLifecycle: a topic can be created and deleted; deleting it again
// wraps ErrTopicNotFound.
func topicLifecycle(t *testing.T, tg Target) {
	d := Connect(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	name := fmt.Sprintf("bb-conformance-lifecycle-%d", time.Now().UnixNano())
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteTopic(ctx, name); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := d.DeleteTopic(ctx, name); !errors.Is(err, driver.ErrTopicNotFound) {
		t.Errorf("deleting a deleted topic: %v; want an error wrapping ErrTopicNotFound", err)
	}
}

// roundTrip: every message sent is acknowledged exactly once, without
// error, and delivered exactly once to the one consumer; a broker that
// counts written messages counts them all.
func roundTrip(t *testing.T, tg Target) {
	const n = 2000
	d := Connect(t, tg)
	topic, parts := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	got := newReceived()
	subscribe(ctx, t, d, topic, topic+"-sub", got)
	produceAll(ctx, t, d, topic, n)
	waitFor(t, tg.Bound, "every message delivered", func() bool { return got.distinct() == n })
	got.mu.Lock()
	for i, c := range got.count {
		if c != 1 {
			t.Errorf("message %d delivered %d times", i, c)
		}
	}
	// A broker that keeps each partition in order delivers in one lane
	// per partition; one that promises no order (every delivery
	// NoOrder: RocketMQ's producers send concurrently) has none to count.
	if tg.Capabilities.Partitions && !(len(got.lanes) == 1 && got.lanes[driver.NoOrder]) && len(got.lanes) != parts {
		t.Errorf("deliveries in lanes %v; want the %d partitions", got.lanes, parts)
	}
	got.mu.Unlock()
	if wc, ok := d.(driver.WrittenCounter); ok {
		waitFor(t, tg.Bound, "the broker counts every message", func() bool {
			w, err := wc.Written(ctx, topic)
			return err == nil && w == n
		})
	}
}

// ackOnceOnClose: a producer closed with messages in flight calls the
// AckFunc exactly once for each, never concurrently, and never after
// Close returns.
func ackOnceOnClose(t *testing.T, tg Target) {
	const n = 5000
	d := Connect(t, tg)
	topic, _ := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	a := newAcks()
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, a.fn)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(n) {
		p.Send(ctx, message(i))
	}
	p.Close()
	after := a.total()
	time.Sleep(200 * time.Millisecond)
	if a.total() != after {
		t.Errorf("%d acks after Close returned", a.total()-after)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.count) != n || len(a.errs) > 0 {
		t.Fatalf("%d of %d messages acknowledged or failed by Close; %v", len(a.count), n, a.errs)
	}
	for i, c := range a.count {
		if c != 1 {
			t.Fatalf("message %d: AckFunc called %d times", i, c)
		}
	}
}

// manyProducersAndConsumers: with four producers and two subscriptions of
// two consumers each, every subscription receives every message.
func manyProducersAndConsumers(t *testing.T, tg Target) {
	const producers, each = 4, 500
	d := Connect(t, tg)
	topic, _ := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	subs := []*received{newReceived(), newReceived()}
	for s, got := range subs {
		for range 2 {
			subscribe(ctx, t, d, topic, fmt.Sprintf("%s-sub-%d", topic, s), got)
		}
	}
	if w, ok := d.(driver.SubscriptionWaiter); ok {
		for s := range subs {
			if err := w.WaitSubscription(ctx, topic, fmt.Sprintf("%s-sub-%d", topic, s), 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for pi := range producers {
		a := newAcks()
		p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: each}, a.fn)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.Close()
			for i := range uint64(each) {
				p.Send(ctx, message(uint64(pi)*each+i))
			}
			if err := p.Flush(ctx); err != nil || a.failed > 0 {
				t.Errorf("producer %d: flush %v, %d failed", pi, err, a.failed)
			}
		}()
	}
	wg.Wait()
	for s, got := range subs {
		waitFor(t, tg.Bound, fmt.Sprintf("subscription %d receives all %d messages", s, producers*each),
			func() bool { return got.distinct() == producers*each })
	}
}

// pauseResume: a paused consumer stops receiving (what it fetched before
// may still arrive) and receives the rest after Resume.
func pauseResume(t *testing.T, tg Target) {
	const n = 500
	d := Connect(t, tg)
	topic, _ := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	got := newReceived()
	pz, ok := subscribe(ctx, t, d, topic, topic+"-sub", got).(driver.Pauser)
	if !ok {
		t.Skip("the driver's consumers cannot pause")
	}
	pz.Pause()
	time.Sleep(500 * time.Millisecond) // the pause reaches the client's fetcher
	a := newAcks()
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, a.fn)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range uint64(n) {
		p.Send(ctx, message(i))
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if paused := got.distinct(); paused == n {
		t.Fatalf("all %d messages arrived while paused", n)
	}
	pz.Resume()
	waitFor(t, tg.Bound, "every message after Resume", func() bool { return got.distinct() == n })
}

// unreachable: a driver for an address where nothing answers fails its
// first call with an error, within the suite's bound, not hanging.
func unreachable(t *testing.T, tg Target) {
	if tg.Unreachable == nil {
		t.Skip("no unreachable configuration given")
	}
	d, err := tg.Unreachable(t)
	if err != nil {
		return // refused at once: clear enough
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	start := time.Now()
	if _, err := d.BrokerVersion(ctx); err == nil {
		t.Fatal("BrokerVersion succeeded against an unreachable broker")
	}
	if took := time.Since(start); took >= tg.Bound {
		t.Errorf("the error took %s, the whole bound", took)
	}
}

// rereadHolds: a driver that reads the broker again (driver.Rereader)
// reads every message a subscription has not taken, once each, and does
// not take them: a subscription whose consumer closed before the
// messages were sent holds all of them, on a second read as on the first.
func rereadHolds(t *testing.T, tg Target) {
	// More than a thousand per partition: drivers that read in pages
	// read several.
	const n = 3500
	d := Connect(t, tg)
	rr, ok := d.(driver.Rereader)
	if !ok {
		t.Skip("the driver cannot read the broker again: losses are unconfirmed")
	}
	topic, _ := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	sub := topic + "-sub"
	c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: sub, Start: driver.StartEarliest}, func(*driver.Delivery) {})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Ready(ctx)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, d, topic, n)
	for round := 1; round <= 2; round++ {
		got := newReceived()
		err := rr.Reread(ctx, topic, sub, func(v []byte) { got.fn(&driver.Delivery{Value: v}) })
		if errors.Is(err, driver.ErrNoReread) {
			t.Skipf("the driver, as configured, cannot read the broker again: %v", err)
		}
		if err != nil {
			t.Fatalf("re-read %d: %v", round, err)
		}
		got.mu.Lock()
		if len(got.count) != n {
			t.Errorf("re-read %d found %d of the %d messages", round, len(got.count), n)
		}
		for i, k := range got.count {
			if k != 1 {
				t.Errorf("re-read %d read message %d %d times", round, i, k)
			}
		}
		got.mu.Unlock()
	}
}

// capabilitiesAsDeclared: what the driver's capabilities declare holds:
// a written count declared is one the driver gives, and a broker that
// replays gives a subscription made after the messages were sent every
// one of them.
func capabilitiesAsDeclared(t *testing.T, tg Target) {
	d := Connect(t, tg)
	if _, counts := d.(driver.WrittenCounter); counts != tg.Capabilities.Written {
		t.Errorf("the capabilities declare a written count %v; the driver implements driver.WrittenCounter: %v", tg.Capabilities.Written, counts)
	}
	if !tg.Capabilities.Replay {
		return
	}
	const n = 200
	topic, _ := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	produceAll(ctx, t, d, topic, n)
	got := newReceived()
	subscribe(ctx, t, d, topic, topic+"-late", got)
	waitFor(t, tg.Bound, "a subscription made after the messages were sent replays them all", func() bool { return got.distinct() == n })
}

// slowConsumer: a consumer whose ConsumeFunc blocks for a processing
// time on each message (a workload's consumerProcessingTime) is called
// for the next message only after the call returns, and still gets every
// message exactly once: its connection stays alive meanwhile and what it
// has not yet taken waits for it.
func slowConsumer(t *testing.T, tg Target) {
	const n, each = 100, 20 * time.Millisecond
	d := Connect(t, tg)
	topic, _ := newTopic(t, tg, d)
	ctx, cancel := context.WithTimeout(context.Background(), tg.Bound)
	defer cancel()
	got := newReceived()
	var busy, overlapped atomic.Int32
	slow := func(m *driver.Delivery) {
		if busy.Add(1) > 1 {
			overlapped.Add(1)
		}
		got.fn(m)
		time.Sleep(each)
		busy.Add(-1)
	}
	c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: topic + "-slow", Start: driver.StartEarliest}, slow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	produceAll(ctx, t, d, topic, n)
	waitFor(t, tg.Bound, "every message delivered to the slow consumer", func() bool { return got.distinct() == n })
	if took := time.Since(start); took < (n-1)*each {
		t.Errorf("%d messages of %s each took %s: the consumer took messages before it returned", n, each, took)
	}
	if o := overlapped.Load(); o > 0 {
		t.Errorf("%d calls of the ConsumeFunc overlapped another", o)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for i, k := range got.count {
		if k != 1 {
			t.Errorf("message %d delivered %d times", i, k)
		}
	}
}

// produceAll sends messages 0 to n-1 to topic with one producer whose
// window holds them all, flushes, and fails the test unless every one was
// acknowledged.
func produceAll(ctx context.Context, t *testing.T, d driver.Driver, topic string, n int) {
	t.Helper()
	a := newAcks()
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, a.fn)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(n) {
		p.Send(ctx, message(i))
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	p.Close()
	if a.total() != n || a.failed != 0 || len(a.errs) > 0 {
		t.Fatalf("%d acks for %d messages, %d failed, %v", a.total(), n, a.failed, a.errs)
	}
}
