package pulsar

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewProducer implements driver.Driver. Each producer has a client of
// its own, whose memory limit holds the producer's in-flight messages,
// as OMB's producers share one client sized for all of them.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := d.cfg
	cl, err := d.newClient(max(c.memoryLimit, 2*int64(spec.MaxInFlight)*int64(spec.MaxMessageBytes)))
	if err != nil {
		return nil, err
	}
	o := producerOptions(c, spec)
	o.Topic = d.topicName(spec.Topic)
	if c.dedup {
		// Deduplication tells a resent message by its producer's name
		// and sequence id: a name of its own keeps a producer's ids apart
		// from every other's, also across reconnections.
		o.Name = "brokerbench-" + randomHex(8)
	}
	pp, err := cl.CreateProducer(o)
	for notServedYet(err) && pause(ctx, time.Second) {
		pp, err = cl.CreateProducer(o)
	}
	if err != nil {
		cl.Close()
		return nil, d.clientError(ctx, fmt.Errorf("pulsar producer of topic %q: %w", spec.Topic, err))
	}
	p := &producer{cl: cl, pp: pp, ack: ack}
	if c.sendTimeout > 0 {
		p.startTimeouts(c.sendTimeout)
	}
	return p, nil
}

// producerOptions maps the producer settings onto the client's options
// for a producer of spec: its queue holds at least the runner's
// in-flight bound, so that Send does not block below it.
func producerOptions(c *config, spec driver.ProducerSpec) pulsar.ProducerOptions {
	return pulsar.ProducerOptions{
		DisableBatching:         !c.batching,
		BatchingMaxPublishDelay: c.batchDelay,
		BatchingMaxSize:         max(c.batchMaxBytes, uint(spec.MaxMessageBytes)),
		BatchingMaxMessages:     c.batchMaxMessages,
		DisableBlockIfQueueFull: !c.blockIfQueueFull,
		MaxPendingMessages:      max(c.pendingQueueSize, spec.MaxInFlight),
		// The client's own send timeout can call a message's callback
		// twice, when a receipt comes while it fails the message
		// (apache/pulsar-client-go#1497), and panic; the producer times
		// out sends itself (failTimedOut).
		SendTimeout:     -1,
		CompressionType: c.compression,
		MessageRouter:   newRouter(c).route,
	}
}

// router picks the partition of a message as the Java client's default
// router does for OMB's producers: by its key when it has one (FNV-1a,
// as brokerbench's other drivers); without, in turn, and with batching
// on, one partition per batching delay so that batches fill. The Go
// client's own router, with OMB's unlimited batch count, would send a
// keyless producer's messages to one partition until a batch's bytes
// ran out. It is safe for concurrent use.
type router struct {
	spread      driver.Spreader
	batching    bool
	switchEvery int64  // ns each partition has in turn, with batching on
	offset      uint64 // the first partition's, so producers start apart
}

func newRouter(c *config) *router {
	return &router{batching: c.batching, switchEvery: max(c.batchDelay.Nanoseconds(), int64(time.Millisecond)), offset: rand.Uint64()}
}

func (r *router) route(m *pulsar.ProducerMessage, md pulsar.TopicMetadata) int {
	n := int(md.NumPartitions())
	switch {
	case n <= 1:
		return 0
	case m.Key != "" || !r.batching:
		return r.spread.Partition([]byte(m.Key), n)
	default:
		return int((uint64(clock.Now()/r.switchEvery) + r.offset) % uint64(n))
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

type producer struct {
	cl  pulsar.Client
	pp  pulsar.Producer
	ack driver.AckFunc
	// sent counts the messages given to Send. Only Send's goroutine
	// writes it, and acknowledgements read it only while Flush or Close
	// waits: unlike one counter both sides write, it costs no cache line
	// moving between them per message.
	sent atomic.Int64
	// refused counts the messages Send failed without giving them to
	// the client (its context had ended); only Send's goroutine writes
	// it, and only then.
	refused atomic.Int64
	// ackMu serialises acknowledgements (the client calls back from each
	// partition's connection) and guards settled and idle.
	ackMu sync.Mutex
	// called counts the client's callbacks, also those for messages
	// settled already (by a timeout or Close): Close waits for it to
	// reach sent less refused before it closes the client's producer.
	// Only the callbacks write it: Send's goroutine writes no second
	// counter per message.
	called atomic.Int64
	// settled counts the messages acknowledged or failed.
	settled int64
	// idle, while Flush or Close waits, is closed when settled reaches
	// sent.
	idle chan struct{}
	// slots are every message slot of this producer, for Close to fail
	// those the client did not call back for, and failTimedOut those it
	// did not call back for in time.
	slotsMu sync.Mutex
	slots   []*sendSlot
	// stopTimeouts ends failTimedOut, which closes timeoutsDone; both
	// nil without a send timeout.
	stopTimeouts, timeoutsDone chan struct{}
}

// sendSlot is the per-Message state kept in Message.DriverState: the
// message the client sends and the callback bound to it.
type sendSlot struct {
	p    *producer
	msg  *driver.Message
	pm   pulsar.ProducerMessage
	sent func(pulsar.MessageID, *pulsar.ProducerMessage, error) // s.onSent, bound once
	// since is when the message in flight was sent, in clock
	// nanoseconds plus one; 0 when none is. Whoever swaps it to 0
	// acknowledges the message.
	since atomic.Int64
	// abandoned is set when the message timed out before the client
	// called back: the client may still call back, or read the payload,
	// so the slot is not used again.
	abandoned atomic.Bool
}

// Send implements driver.Producer. It allocates only the first time a
// Message is sent, and for a key; of the client's message it sets the
// payload and key, the only fields the driver uses.
//
// The client gets no context to wait on: with the queues and memory
// producerOptions and NewProducer size for the in-flight bound it never
// waits, and a cancellable context would add a channel to its select
// on every message. A message sent once ctx has ended fails at once, as
// the client fails it.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	s, _ := m.DriverState.(*sendSlot)
	if s == nil || s.p != p || s.abandoned.Load() {
		s = &sendSlot{p: p, msg: m}
		s.sent = s.onSent
		m.DriverState = s
		p.slotsMu.Lock()
		p.slots = append(p.slots, s)
		p.slotsMu.Unlock()
	}
	s.pm.Payload = m.Value
	s.pm.Key = ""
	if len(m.Key) > 0 {
		s.pm.Key = string(m.Key)
	}
	sentAt := m.Time
	if sentAt == 0 { // not set by the runner: a caller of its own
		sentAt = clock.Now()
	}
	s.since.Store(max(sentAt+1, 1))
	p.sent.Add(1)
	if err := ctx.Err(); err != nil {
		p.refused.Add(1)
		s.finish(err)
		return
	}
	p.pp.SendAsync(context.Background(), &s.pm, s.sent)
}

// onSent is the client's callback for the slot's message.
func (s *sendSlot) onSent(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
	s.finish(err)
	s.p.called.Add(1)
}

// finish acknowledges the slot's message with err, unless that was done
// already (by a timeout or Close).
func (s *sendSlot) finish(err error) {
	for {
		since := s.since.Load()
		if since == 0 {
			return
		}
		if s.since.CompareAndSwap(since, 0) {
			break
		}
	}
	s.acknowledge(err)
}

// acknowledge passes the outcome of the slot's message on, once its
// caller has taken it out of flight.
func (s *sendSlot) acknowledge(err error) {
	if err != nil {
		err = sendError{err}
	}
	p := s.p
	p.ackMu.Lock()
	p.ack(s.msg, err)
	p.settled++
	if p.idle != nil && p.settled == p.sent.Load() {
		close(p.idle)
		p.idle = nil
	}
	p.ackMu.Unlock()
}

// waitSettled waits until every message sent so far has been
// acknowledged or failed, or until ctx ends.
func (p *producer) waitSettled(ctx context.Context) error {
	p.ackMu.Lock()
	if p.settled == p.sent.Load() {
		p.ackMu.Unlock()
		return nil
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	idle := p.idle
	p.ackMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush implements driver.Producer: it sends the open batches and waits
// for every acknowledgement.
func (p *producer) Flush(ctx context.Context) error {
	_ = p.pp.FlushWithCtx(ctx) // a failed send is the message's ack's to report
	return p.waitSettled(ctx)
}

// startTimeouts starts failTimedOut; Close stops it.
func (p *producer) startTimeouts(timeout time.Duration) {
	p.stopTimeouts = make(chan struct{})
	p.timeoutsDone = make(chan struct{})
	go p.failTimedOut(timeout)
}

// failTimedOut fails, every tenth of timeout, the messages in flight
// for longer than timeout, as the client's send timeout would, until
// stopTimeouts is closed.
func (p *producer) failTimedOut(timeout time.Duration) {
	defer close(p.timeoutsDone)
	t := time.NewTicker(timeout / 10)
	defer t.Stop()
	for {
		select {
		case <-p.stopTimeouts:
			return
		case <-t.C:
		}
		oldest := clock.Now() - int64(timeout) + 1 // since is the send time plus one
		p.slotsMu.Lock()
		for _, s := range p.slots {
			since := s.since.Load()
			if since == 0 || since > oldest {
				continue
			}
			s.abandoned.Store(true) // before the swap: once acknowledged, the message may be sent again
			if s.since.CompareAndSwap(since, 0) {
				s.acknowledge(fmt.Errorf("not acknowledged within producer.sendTimeoutMs (%v): %w", timeout, pulsar.ErrSendTimeout))
			}
		}
		p.slotsMu.Unlock()
	}
}

// closeWait bounds how long Close waits for the client to call back for
// the messages it holds, in all and without one callback coming.
const (
	closeWait      = 10 * time.Second
	closeWaitStill = time.Second
)

// Close implements driver.Producer: messages still in flight are failed,
// and every acknowledgement has been called when it returns.
//
// It first waits, within closeWait, while the client keeps calling back
// for messages it holds: the client's Close fails those it still holds
// while receipts for them may come in, and a receipt for a message
// failed that way panics in the client (the race of
// apache/pulsar-client-go#1497, on its close path). A broker that
// answers nothing for closeWaitStill sends no receipt to race with.
func (p *producer) Close() {
	if p.stopTimeouts != nil {
		close(p.stopTimeouts)
		<-p.timeoutsDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	_ = p.pp.FlushWithCtx(ctx)
	cancel()
	p.awaitClient(closeWait, closeWaitStill)
	p.pp.Close()
	p.slotsMu.Lock()
	for _, s := range p.slots {
		s.finish(pulsar.ErrProducerClosed)
	}
	p.slotsMu.Unlock()
	_ = p.waitSettled(context.Background())
	p.cl.Close()
}

// awaitClient waits until the client has called back for every message
// it was given, for at most total, and at most still without a callback.
func (p *producer) awaitClient(total, still time.Duration) {
	const poll = 20 * time.Millisecond
	deadline := time.Now().Add(total)
	called, lastMove := p.called.Load(), time.Now()
	for p.called.Load() < p.sent.Load()-p.refused.Load() {
		now := time.Now()
		if c := p.called.Load(); c != called {
			called, lastMove = c, now
		}
		if now.After(deadline) || now.Sub(lastMove) >= still {
			return
		}
		time.Sleep(poll)
	}
}

// notServedYet reports whether err is a broker's answer that it does not
// serve the topic's namespace bundle yet: after a broker of a cluster
// started again, its bundles move for a while, and a lookup asked again
// finds their owner.
func notServedYet(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ServiceNotReady")
}

// pause waits d, or until ctx ends; it reports whether ctx is still live.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
