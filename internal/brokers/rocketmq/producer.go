package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// errProducerClosed fails the messages in flight when a producer closes.
var errProducerClosed = errors.New("producer closed")

// NewProducer implements driver.Driver: a client of the proxies that
// sends to spec.Topic, its route fetched when it returns.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pp, err := rmq.NewProducer(d.clientConfig(""), rmq.WithTopics(spec.Topic), rmq.WithMaxAttempts(int32(d.cfg.maxAttempts)),
		rmq.WithClientFunc(d.newClient))
	if err == nil {
		err = pp.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("rocketmq producer of topic %q at %s: %w", spec.Topic, d.cfg.grpcEndpoint, err)
	}
	return &producer{pp: pp, topic: spec.Topic, delay: d.cfg.delay, ack: ack, calls: make(chan struct{}, d.cfg.maxRequests)}, nil
}

type producer struct {
	pp    rmq.Producer
	topic string
	delay time.Duration // 0: normal messages
	ack   driver.AckFunc
	// calls holds a token for every send in a call to the proxy
	// (maxInFlightRequests).
	calls chan struct{}
	// ackMu serialises acknowledgements: the client calls back from a
	// goroutine per message.
	ackMu sync.Mutex
	// pending counts messages sent and not yet acknowledged or failed.
	pending sync.WaitGroup
	// slots are every message slot of this producer, for Close to fail
	// those the client did not call back for.
	slotsMu sync.Mutex
	slots   []*sendSlot
}

// sendSlot is the per-Message state kept in Message.DriverState: the
// client's message and the callback bound to it.
type sendSlot struct {
	p        *producer
	msg      *driver.Message
	rm       rmq.Message
	sent     func(context.Context, []*rmq.SendReceipt, error) // s.onSent, bound once
	inFlight atomic.Bool
	inCall   atomic.Bool // the message holds a token of calls
}

// Send implements driver.Producer. It allocates a slot only the first
// time a Message is sent; the client allocates for every send.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	s, _ := m.DriverState.(*sendSlot)
	if s == nil || s.p != p {
		s = &sendSlot{p: p, msg: m}
		s.sent = s.onSent
		m.DriverState = s
		p.slotsMu.Lock()
		p.slots = append(p.slots, s)
		p.slotsMu.Unlock()
	}
	s.rm = rmq.Message{Topic: p.topic, Body: m.Value}
	if len(m.Key) > 0 {
		s.rm.SetKeys(string(m.Key))
	}
	if p.delay > 0 {
		s.rm.SetDelayTimestamp(time.Now().Add(p.delay))
	}
	s.inFlight.Store(true)
	p.pending.Add(1)
	select {
	case p.calls <- struct{}{}:
	case <-ctx.Done():
		s.finish(ctx.Err())
		return
	}
	s.inCall.Store(true)
	p.pp.SendAsync(ctx, &s.rm, s.sent)
}

// onSent is the client's callback for the slot's message.
func (s *sendSlot) onSent(_ context.Context, _ []*rmq.SendReceipt, err error) {
	if s.inCall.CompareAndSwap(true, false) {
		<-s.p.calls
	}
	s.finish(err)
}

// finish acknowledges the slot's message with err, unless that was done
// already (by Close, or by a client that called back twice).
func (s *sendSlot) finish(err error) {
	if !s.inFlight.CompareAndSwap(true, false) {
		return
	}
	if err != nil {
		err = sendError{err}
	}
	p := s.p
	p.ackMu.Lock()
	p.ack(s.msg, err)
	p.ackMu.Unlock()
	p.pending.Done()
}

// Flush implements driver.Producer: the client sends every message at
// once, so it waits for every acknowledgement.
func (p *producer) Flush(ctx context.Context) error {
	return driver.WaitIdle(ctx, &p.pending)
}

// Close implements driver.Producer: messages still in flight are failed,
// and every acknowledgement has been called when it returns.
func (p *producer) Close() {
	p.slotsMu.Lock()
	for _, s := range p.slots {
		s.finish(errProducerClosed)
	}
	p.slotsMu.Unlock()
	p.pending.Wait()
	_ = p.pp.GracefulStop()
}
