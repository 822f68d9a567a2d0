// Package memory is the reference driver: a broker held in this process's
// memory, with the semantics the driver contract describes and nothing
// else. Topics are partitioned logs; each subscription is a group whose
// members share the partitions; acknowledgements arrive asynchronously.
// It lets runner tests run without a broker, and the conformance suite
// (brokertest) checks it like any driver.
//
// Its module registers it as the driver "memory" (see register.go), with
// no local cluster and no metrics, as it lives in the process: runs on it
// measure brokerbench itself, and the costs a config gives the broker,
// never a broker worth comparing.
//
// Its time is the time package's, so under testing/synctest a test sets
// what the broker costs exactly: Delay adds a fixed one-way link latency,
// Ceiling a limit on the messages per second the broker stores.
package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Capabilities are the reference broker's: partitioned, replayable logs
// without replicas.
var Capabilities = driver.Capabilities{Partitions: true, Replay: true, Written: true}

// Broker is one in-memory broker; drivers made by NewDriver share it.
type Broker struct {
	mu     sync.Mutex
	topics map[string]*topic
	// changed is closed and replaced whenever a log grows or a group's
	// membership changes, waking consumers.
	changed chan struct{}
	// Unreachable makes every call fail, as a broker that does not answer.
	Unreachable bool
	// Delay is the one-way time between a client and the broker: a
	// message is stored Delay after its Send, its acknowledgement reaches
	// the producer Delay after it is stored, and consumers receive it
	// Delay after it is stored. Publish and end-to-end latency are each
	// 2*Delay more than without it. Set it before making clients.
	Delay time.Duration
	// Ceiling, if positive, is the most messages per second the broker
	// stores, over all producers: a message beyond it waits its turn, and
	// the ones behind it in its producer's queue with it. Set it before
	// making clients.
	Ceiling float64
	// nextSlot is the earliest time the next message may be stored under
	// Ceiling; guarded by mu.
	nextSlot time.Time
	// up is closed while the broker serves; Stop replaces it with an open
	// channel, which Start closes. Guarded by mu, as is stopped.
	up      chan struct{}
	stopped bool
	// epoch counts the resets of the clients' connections (Reset): a
	// message sent before the latest reset and not yet stored fails, as
	// does every message while refusing is set (Refuse).
	epoch    atomic.Int64
	refusing atomic.Bool
	// linkDelay is the delay a fault adds to Delay, in nanoseconds.
	linkDelay atomic.Int64
}

type topic struct {
	logs   [][]entry // [partition] messages
	next   int       // round-robin partition for messages without a key
	groups map[string]*group
}

// entry is one stored message and when it was stored.
type entry struct {
	value []byte
	at    time.Time
}

type group struct {
	members []*consumer
	offsets []int // next offset per partition
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	up := make(chan struct{})
	close(up)
	return &Broker{topics: map[string]*topic{}, changed: make(chan struct{}), up: up}
}

// ErrConnectionReset fails the messages that were on their way to the
// broker when a fault reset the clients' connections.
var ErrConnectionReset = errors.New("connection to the memory broker reset")

// Stop makes the broker stop serving, as a killed or paused process: it
// stores no message and delivers none until Start. Messages on their way
// wait, and acknowledgements already sent still arrive. Nothing is lost:
// the logs are in this process.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.stopped, b.up = true, make(chan struct{})
	}
}

// Start makes a stopped broker serve again; it does nothing to a serving
// one.
func (b *Broker) Start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		b.stopped = false
		close(b.up)
		b.wake()
	}
}

// Reset fails every message on its way to the broker, as the reset of
// the clients' connections would; later messages are served.
func (b *Broker) Reset() { b.epoch.Add(1) }

// Refuse, while on, fails every message that reaches the broker, as a
// broker that resets each new connection would.
func (b *Broker) Refuse(on bool) { b.refusing.Store(on) }

// SetLinkDelay adds d to the one-way time between the clients and the
// broker, from now on, as a delayed link would (0 removes it).
func (b *Broker) SetLinkDelay(d time.Duration) { b.linkDelay.Store(int64(d)) }

// oneWay is the time a message or an acknowledgement takes between a
// client and the broker now.
func (b *Broker) oneWay() time.Duration { return b.Delay + time.Duration(b.linkDelay.Load()) }

// waitServing returns true once the broker serves, or false if quit is
// closed first.
func (b *Broker) waitServing(quit <-chan struct{}) bool {
	b.mu.Lock()
	up := b.up
	b.mu.Unlock()
	select {
	case <-up:
		return true
	case <-quit:
		return false
	}
}

// ErrUnreachable is returned by every call to an unreachable broker.
var ErrUnreachable = errors.New("memory broker unreachable")

// wake signals waiting consumers; callers hold b.mu.
func (b *Broker) wake() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// NewDriver returns a driver connected to b.
func (b *Broker) NewDriver() driver.Driver { return &Driver{b: b} }

// Driver is a connection to a Broker.
type Driver struct {
	b *Broker
	// effective are the settings of a driver made from a config (New).
	effective map[string]workload.Properties
}

var (
	_ driver.WrittenCounter = (*Driver)(nil)
	_ driver.Pauser         = (*consumer)(nil)
)

func (d *Driver) check(ctx context.Context) error {
	if d.b.Unreachable {
		return ErrUnreachable
	}
	return ctx.Err()
}

// BrokerVersion implements driver.Driver.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	if err := d.check(ctx); err != nil {
		return "", err
	}
	return "brokerbench in-memory reference broker", nil
}

// CreateTopic implements driver.Driver.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	if spec.Partitions < 1 {
		return fmt.Errorf("topic %q: %d partitions", spec.Name, spec.Partitions)
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	if _, ok := d.b.topics[spec.Name]; ok {
		return fmt.Errorf("topic %q exists", spec.Name)
	}
	d.b.topics[spec.Name] = &topic{logs: make([][]entry, spec.Partitions), groups: map[string]*group{}}
	return nil
}

// DeleteTopic implements driver.Driver.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	if _, ok := d.b.topics[name]; !ok {
		return fmt.Errorf("delete %q: %w", name, driver.ErrTopicNotFound)
	}
	delete(d.b.topics, name)
	d.b.wake()
	return nil
}

// Written implements driver.WrittenCounter.
func (d *Driver) Written(ctx context.Context, name string) (int64, error) {
	if err := d.check(ctx); err != nil {
		return 0, err
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	t, ok := d.b.topics[name]
	if !ok {
		return 0, fmt.Errorf("count %q: %w", name, driver.ErrTopicNotFound)
	}
	var n int64
	for _, l := range t.logs {
		n += int64(len(l))
	}
	return n, nil
}

// EffectiveConfig implements driver.Driver: the broker's costs, for a
// driver made from a config.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {}

// NewProducer implements driver.Driver: messages are appended by the
// producer's own goroutine, in order, and acknowledged in that order by
// another, each Broker.Delay after it was stored.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	n := max(1, spec.MaxInFlight)
	p := &producer{
		b: d.b, topic: spec.Topic, ack: ack, queue: make(chan pending, n), acks: make(chan pending, n),
		done: make(chan struct{}), closing: make(chan struct{}),
	}
	go p.run()
	go p.acknowledge()
	return p, nil
}

// pending is a message on its way: to the broker, due there at at, or
// back to the producer with its outcome, due there at at.
type pending struct {
	m   *driver.Message
	at  time.Time
	err error
	// epoch is the broker's reset count when the message was sent.
	epoch int64
}

type producer struct {
	b     *Broker
	topic string
	ack   driver.AckFunc
	queue chan pending // to the broker
	acks  chan pending // back to the producer
	done  chan struct{}
	// closing is closed when Close begins: messages waiting for a
	// stopped broker then fail.
	closing  chan struct{}
	mu       sync.Mutex
	closed   bool
	inFlight sync.WaitGroup
}

// ErrClosed fails messages sent to a closed producer or in flight when it
// closed.
var ErrClosed = errors.New("producer closed")

func (p *producer) Send(ctx context.Context, m *driver.Message) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.ack(m, ErrClosed)
		return
	}
	p.inFlight.Add(1)
	p.mu.Unlock()
	select {
	case p.queue <- pending{m: m, at: time.Now().Add(p.b.oneWay()), epoch: p.b.epoch.Load()}:
	case <-ctx.Done():
		p.ack(m, ctx.Err())
		p.inFlight.Done()
	}
}

// run stores the queued messages, each when it reaches the broker and its
// turn under the ceiling comes, and passes them on to be acknowledged.
func (p *producer) run() {
	defer close(p.acks)
	for s := range p.queue {
		sleepUntil(s.at)
		serving := p.b.waitServing(p.closing)
		sleepUntil(p.b.slot())
		switch {
		case !serving:
			s.err = ErrClosed
		case s.epoch != p.b.epoch.Load() || p.b.refusing.Load():
			s.err = ErrConnectionReset
		default:
			s.err = p.b.append(p.topic, s.m)
		}
		s.at = time.Now().Add(p.b.oneWay())
		p.acks <- s
	}
}

// acknowledge acknowledges the stored messages, in order, each when its
// acknowledgement reaches the producer.
func (p *producer) acknowledge() {
	defer close(p.done)
	for s := range p.acks {
		sleepUntil(s.at)
		p.ack(s.m, s.err)
		p.inFlight.Done()
	}
}

// sleepUntil returns at t, or at once if t has passed.
func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// slot reserves the time at which the next message may be stored under
// the ceiling: now, or one message's share of a second after the
// previous reservation.
func (b *Broker) slot() time.Time {
	now := time.Now()
	if b.Ceiling <= 0 {
		return now
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	at := b.nextSlot
	if at.Before(now) {
		at = now
	}
	b.nextSlot = at.Add(time.Duration(math.Round(1e9 / b.Ceiling)))
	return at
}

// append writes a copy of m's value to its partition: by key hash, or
// round robin without a key.
func (b *Broker) append(name string, m *driver.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Unreachable {
		return ErrUnreachable
	}
	t, ok := b.topics[name]
	if !ok {
		return fmt.Errorf("produce to %q: %w", name, driver.ErrTopicNotFound)
	}
	part := t.next % len(t.logs)
	if len(m.Key) > 0 {
		h := fnv.New32a()
		_, _ = h.Write(m.Key)
		part = int(h.Sum32() % uint32(len(t.logs)))
	} else {
		t.next++
	}
	t.logs[part] = append(t.logs[part], entry{value: append([]byte(nil), m.Value...), at: time.Now()})
	b.wake()
	return nil
}

func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.inFlight) }

// Close drains the queue before it returns: every message in flight is
// acknowledged, or failed (with ErrClosed if it waits for a stopped
// broker).
func (p *producer) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.closing)
	p.mu.Unlock()
	// Sends that passed the closed check finish queueing first.
	p.inFlight.Wait()
	close(p.queue)
	<-p.done
}

// NewConsumer implements driver.Driver: the consumer joins its
// subscription's group, which shares the topic's partitions among its
// members; a new group starts at the beginning of the logs (StartEarliest)
// or at their ends (StartNew).
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	c := &consumer{b: d.b, topic: spec.Topic, consume: consume, stop: make(chan struct{}), done: make(chan struct{})}
	b := d.b
	b.mu.Lock()
	t, ok := b.topics[spec.Topic]
	if !ok {
		b.mu.Unlock()
		return nil, fmt.Errorf("consume %q: %w", spec.Topic, driver.ErrTopicNotFound)
	}
	g, ok := t.groups[spec.Subscription]
	if !ok {
		g = &group{offsets: make([]int, len(t.logs))}
		if spec.Start == driver.StartNew {
			for i, l := range t.logs {
				g.offsets[i] = len(l)
			}
		}
		t.groups[spec.Subscription] = g
	}
	g.members = append(g.members, c)
	c.g = g
	b.wake()
	b.mu.Unlock()
	go c.run()
	return c, nil
}

type consumer struct {
	b       *Broker
	topic   string
	g       *group
	consume driver.ConsumeFunc
	paused  bool // under b.mu
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// assigned returns the partitions c owns in its group: partition i goes to
// member i mod len(members). Callers hold b.mu.
func (c *consumer) assigned() []int {
	var parts []int
	idx := indexOf(c.g.members, c)
	for p := range c.g.offsets {
		if p%len(c.g.members) == idx {
			parts = append(parts, p)
		}
	}
	return parts
}

// run delivers messages of c's partitions, oldest first, each once it has
// reached the consumer (Broker.Delay after it was stored), one at a time
// with the broker unlocked during the ConsumeFunc call.
func (c *consumer) run() {
	defer close(c.done)
	var d driver.Delivery
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		c.b.mu.Lock()
		t, ok := c.b.topics[c.topic]
		var value []byte
		lane := int32(-1)
		var soonest time.Time // when the next message on its way arrives
		if ok && !c.paused && !c.b.stopped {
			now := time.Now()
			for _, p := range c.assigned() {
				off := c.g.offsets[p]
				if off >= len(t.logs[p]) {
					continue
				}
				e := t.logs[p][off]
				if arrives := e.at.Add(c.b.oneWay()); arrives.After(now) {
					if soonest.IsZero() || arrives.Before(soonest) {
						soonest = arrives
					}
					continue
				}
				value, lane = e.value, int32(p)
				c.g.offsets[p]++
				break
			}
		}
		wait := c.b.changed
		c.b.mu.Unlock()
		if lane >= 0 {
			d.Value, d.Lane = value, lane
			c.consume(&d)
			continue
		}
		var arrived <-chan time.Time
		if !soonest.IsZero() {
			timer.Reset(time.Until(soonest))
			arrived = timer.C
		}
		select {
		case <-wait:
		case <-arrived:
		case <-c.stop:
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Pause implements driver.Pauser.
func (c *consumer) Pause() { c.setPaused(true) }

// Resume implements driver.Pauser.
func (c *consumer) Resume() { c.setPaused(false) }

func (c *consumer) setPaused(p bool) {
	c.b.mu.Lock()
	c.paused = p
	c.b.wake()
	c.b.mu.Unlock()
}

// Close leaves the group; its partitions go to the remaining members.
func (c *consumer) Close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.b.mu.Lock()
		if i := indexOf(c.g.members, c); i >= 0 {
			c.g.members = append(c.g.members[:i], c.g.members[i+1:]...)
		}
		c.b.wake()
		c.b.mu.Unlock()
	})
}

func indexOf(members []*consumer, c *consumer) int {
	for i, m := range members {
		if m == c {
			return i
		}
	}
	return -1
}
