package rabbitmq

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewProducer implements driver.Driver: a connection of its own, in
// confirm mode.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if err := d.cfg.producerPace.wait(ctx); err != nil {
		return nil, err
	}
	r, err := d.lookup(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	p := &producer{d: d, exchange: spec.Topic, ack: ack, mandatory: d.cfg.mandatory, mode: amqp.Transient}
	if d.cfg.persistent {
		p.mode = amqp.Persistent
	}
	for i := range r.partitions {
		p.keys = append(p.keys, strconv.Itoa(i))
	}
	if d.cfg.maxOutstanding > 0 {
		p.outstanding = make(chan struct{}, d.cfg.maxOutstanding)
	}
	p.confirmBuffer = max(d.cfg.maxOutstanding, spec.MaxInFlight, 1) + 1
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.connect(ctx, int(d.next.Add(1)-1)); err != nil {
		return nil, err
	}
	return p, nil
}

// producer publishes to one exchange. Publishes are serialized (mu), so
// that each message's delivery tag is known when it is published; the
// confirms of a session are handled by one goroutine, in tag order.
type producer struct {
	d             *Driver
	exchange      string
	keys          []string // routing keys, one per partition
	spread        driver.Spreader
	mode          uint8 // delivery mode: transient or persistent
	mandatory     bool
	ack           driver.AckFunc
	ids           atomic.Uint64 // the last message id made (messageID)
	ackMu         sync.Mutex    // AckFunc is never called concurrently
	outstanding   chan struct{} // bounds unconfirmed messages, if set
	confirmBuffer int
	inFlight      sync.WaitGroup
	loops         sync.WaitGroup // the sessions' confirm loops

	mu   sync.Mutex // serializes publishes; guards what follows
	sess *session
	// at is the index of the URI of the last session; after losing it,
	// the producer connects to the next URI that answers at once.
	at int
	// lastFailed is when connecting to every URI last failed: the next
	// round waits a second from it.
	lastFailed time.Time
	// lostAt is when the last session was lost.
	lostAt time.Time
	closed bool
}

// session is one connection and channel of a producer, and the messages
// published on it that await their confirms, in tag order.
type session struct {
	conn *amqp.Connection
	ch   *amqp.Channel

	mu      sync.Mutex
	pending []pendingMessage
}

type pendingMessage struct {
	tag uint64
	m   *driver.Message
}

// connect opens a new session on the first URI that answers, from index
// from on (p.mu held).
func (p *producer) connect(ctx context.Context, from int) (*session, error) {
	conn, at, err := p.d.dialFrom(ctx, "producer", from)
	if err != nil {
		p.lastFailed = time.Now()
		return nil, err
	}
	p.at = at
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("RabbitMQ producer channel: %w", err)
	}
	s := &session{conn: conn, ch: ch}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, p.confirmBuffer))
	returns := ch.NotifyReturn(make(chan amqp.Return, p.confirmBuffer))
	p.loops.Add(1)
	go p.confirmLoop(s, confirms, returns)
	p.sess = s
	return s, nil
}

// failoverSettle is how long after losing its session a producer waits
// before it publishes on the next one: RabbitMQ 3.10 nacks every publish
// of a channel opened to a quorum queue while the queue elects a new
// leader after its leader's node went down, for as long as the channel
// lives. Sends meanwhile wait (send lag) rather than fail.
const failoverSettle = time.Second

// session returns the producer's live session. After losing one, it
// connects at once to the next URI that answers and publishes on it
// failoverSettle after the loss: a node of the cluster going down costs
// the messages in flight and a second of delay, not failed sends. When
// no URI answers, it tries again a second later (p.mu held).
func (p *producer) session(ctx context.Context) (*session, error) {
	if p.sess != nil && !p.sess.ch.IsClosed() {
		return p.sess, nil
	}
	if p.sess != nil {
		_ = p.sess.conn.Close()
		p.sess, p.lostAt = nil, time.Now()
	}
	if wait := time.Second - time.Since(p.lastFailed); wait > 0 {
		return nil, fmt.Errorf("no node answered; connecting again in %s", wait.Round(time.Millisecond))
	}
	s, err := p.connect(ctx, p.at+1)
	if err != nil || p.lostAt.IsZero() {
		return s, err
	}
	if settle := failoverSettle - time.Since(p.lostAt); settle > 0 {
		t := time.NewTimer(settle)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s, nil
}

// Send implements driver.Producer.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	p.inFlight.Add(1)
	if p.outstanding != nil {
		select {
		case p.outstanding <- struct{}{}:
		case <-ctx.Done():
			p.finish(m, errKind{"TIMEOUT", ctx.Err()})
			return
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.finish(m, errKind{"CLOSED", errClosed})
		return
	}
	s, err := p.session(ctx)
	if err != nil {
		p.mu.Unlock()
		p.finish(m, errKind{"CONNECTION", err})
		return
	}
	tag := s.ch.GetNextPublishSeqNo()
	s.push(tag, m)
	msg := amqp.Publishing{Body: m.Value, DeliveryMode: p.mode}
	if p.mandatory {
		// A returned message is known by its id.
		msg.MessageId = p.messageID(m)
	}
	err = s.ch.PublishWithContext(ctx, p.exchange, p.keys[p.spread.Partition(m.Key, len(p.keys))], p.mandatory, false, msg)
	p.mu.Unlock()
	if err != nil && s.dropTail(tag) {
		p.finish(m, errKind{"CONNECTION", err})
	}
}

// messageID returns the id m is published with, which identifies it when
// the broker returns it: made on m's first send and kept in its
// DriverState, so that publishing it again does not allocate. A message
// is in flight once at a time, so no two pending messages share an id.
func (p *producer) messageID(m *driver.Message) string {
	id, ok := m.DriverState.(string)
	if !ok {
		id = strconv.FormatUint(p.ids.Add(1), 10)
		m.DriverState = id
	}
	return id
}

// finish acknowledges m to the runner, once.
func (p *producer) finish(m *driver.Message, err error) {
	p.ackMu.Lock()
	p.ack(m, err)
	p.ackMu.Unlock()
	if p.outstanding != nil {
		<-p.outstanding
	}
	p.inFlight.Done()
}

func (s *session) push(tag uint64, m *driver.Message) {
	s.mu.Lock()
	s.pending = append(s.pending, pendingMessage{tag, m})
	s.mu.Unlock()
}

// dropTail removes the message with tag, whose publish failed, and
// reports whether it was still pending (not failed with the session).
func (s *session) dropTail(tag uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.pending); n > 0 && s.pending[n-1].tag == tag {
		s.pending = s.pending[:n-1]
		return true
	}
	return false
}

// pop removes the oldest pending message, which must have tag.
func (s *session) pop(tag uint64) (*driver.Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 || s.pending[0].tag != tag {
		return nil, false
	}
	m := s.pending[0].m
	s.pending[0] = pendingMessage{}
	s.pending = s.pending[1:]
	if len(s.pending) == 0 {
		s.pending = s.pending[:0:0] // let the array go
	}
	return m, true
}

// nackReopen is how long a session may receive nothing but nacks before
// it is closed, so that the producer connects again. RabbitMQ 3.10 nacks
// every publish of a channel opened to a quorum queue while the queue
// elects a new leader (after its leader's node went down), for as long as
// the channel lives; a new channel publishes normally.
const nackReopen = time.Second

// confirmLoop settles the session's messages as their confirms arrive
// (amqp091-go hands them over in tag order). A message returned as
// unroutable is confirmed after its return, which is taken first, and is
// known by its message id. When the channel closes, every message still
// pending fails. A session that receives only nacks for nackReopen is
// closed.
func (p *producer) confirmLoop(s *session, confirms <-chan amqp.Confirmation, returns <-chan amqp.Return) {
	defer p.loops.Done()
	var nacksSince time.Time      // the first of the nacks received since the last ack
	returned := map[string]bool{} // ids of messages returned, whose confirm is due
	takeReturn := func(r amqp.Return) { returned[r.MessageId] = true }
	for {
		var c amqp.Confirmation
		var ok bool
		// A confirm already waiting is taken without the select over
		// returns, which costs more than the receive; the returns that
		// came before it are taken below, before it is settled.
		select {
		case c, ok = <-confirms:
		default:
			select {
			case r, ok := <-returns:
				if ok {
					takeReturn(r)
				} else {
					returns = nil
				}
				continue
			case c, ok = <-confirms:
			}
		}
		if !ok {
			p.failPending(s)
			return
		}
	drain:
		for {
			select {
			case r, ok := <-returns:
				if !ok {
					returns = nil
					break drain
				}
				takeReturn(r)
			default:
				break drain
			}
		}
		m, ok := s.pop(c.DeliveryTag)
		if !ok {
			continue
		}
		var err error
		switch {
		case len(returned) > 0 && returned[p.messageID(m)]:
			delete(returned, p.messageID(m))
			err = errKind{"UNROUTABLE", errUnroutable}
		case !c.Ack:
			err = errKind{"NACK", errNack}
			if nacksSince.IsZero() {
				nacksSince = time.Now()
			} else if time.Since(nacksSince) >= nackReopen {
				// Closing ends confirms, and with them this loop.
				go func() { _ = s.conn.Close() }()
				nacksSince = time.Now()
			}
		default:
			nacksSince = time.Time{}
		}
		p.finish(m, err)
	}
}

// failPending fails every message of a closed session.
func (p *producer) failPending(s *session) {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, pm := range pending {
		p.finish(pm.m, errKind{"CONNECTION", errDisconnects})
	}
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.inFlight) }

// Close implements driver.Producer: it waits up to 5 s for the confirms
// of messages in flight, then closes the connection, failing those still
// unconfirmed.
func (p *producer) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	s := p.sess
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = p.Flush(ctx)
	cancel()
	if s != nil {
		_ = s.conn.Close()
	}
	p.loops.Wait()
}
