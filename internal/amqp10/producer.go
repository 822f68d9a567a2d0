package amqp10

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// Link is where a producer sends or a consumer receives: the address of
// its link's target or source, and the capabilities the link asks it
// for ("topic": a broker that creates addresses on demand makes a
// multicast one).
type Link struct {
	Address      string
	Capabilities []string
}

// NewProducer returns a producer sending to link on a connection of its
// own, to the first of nodes that answers from the one at index from
// (see ConnectFrom), whose messages the broker settles once it accepted
// them: durable says the broker must persist them first (AMQP's header
// durable). maxInFlight bounds the messages sent and not yet
// acknowledged.
func NewProducer(ctx context.Context, nodes []*Broker, from uint64, link Link, durable bool, maxInFlight int, ack driver.AckFunc) (driver.Producer, error) {
	p := &producer{nodes: nodes, target: link, ack: ack, durable: durable,
		sent: make(chan sent, max(1, maxInFlight)), acked: make(chan struct{})}
	if err := p.open(ctx, from); err != nil {
		return nil, err
	}
	go p.acknowledge()
	return p, nil
}

// producer sends over one sender link. Send is called by
// one goroutine at a time; one goroutine of its own waits for the
// broker's settlements, in the order of the sends, and calls the
// AckFunc. When its connection is lost (its node killed, or restarted),
// the messages in flight on it fail, and the next send connects to the
// next node that answers, or to its own again when it is the only one.
type producer struct {
	nodes   []*Broker
	target  Link
	ack     driver.AckFunc
	durable bool
	sent    chan sent
	acked   chan struct{}
	// mu guards what follows, so that no Send counts a message pending
	// once Close waits for them, nor uses a connection Close closed.
	mu     sync.Mutex
	closed bool
	conn   *amqp.Conn
	sender *amqp.Sender
	// at is the index of the node of conn; retryAt when a lost
	// connection may next be replaced.
	at      uint64
	retryAt time.Time
	pending sync.WaitGroup
	closing sync.Once
}

// open connects the producer to the first node that answers from the
// one at index from, and opens its sender link there (p.mu held, or p
// not shared yet).
func (p *producer) open(ctx context.Context, from uint64) error {
	conn, at, err := ConnectFrom(ctx, p.nodes, from)
	if err != nil {
		return err
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		conn.Close()
		return fmt.Errorf("AMQP session: %w", err)
	}
	sender, err := sess.NewSender(ctx, p.target.Address, &amqp.SenderOptions{SettlementMode: amqp.SenderSettleModeUnsettled.Ptr(), TargetCapabilities: p.target.Capabilities})
	if err != nil {
		conn.Close()
		return fmt.Errorf("open a sender to %q: %w", p.target.Address, err)
	}
	p.conn, p.sender, p.at = conn, sender, at
	return nil
}

// reconnectEvery bounds how often a producer whose connection was lost
// tries to connect again: the sends in between fail at once.
const reconnectEvery = time.Second

// link returns the producer's sender link, made again on the next node
// that answers once its connection is lost, at most once every
// reconnectEvery (p.mu held).
func (p *producer) link(ctx context.Context) (*amqp.Sender, error) {
	if !Lost(p.conn) {
		return p.sender, nil
	}
	if time.Now().Before(p.retryAt) {
		return nil, fmt.Errorf("the connection to %s was lost (connecting again in at most %s): %w", p.nodes[p.at].Addr, reconnectEvery, p.conn.Err())
	}
	p.retryAt = time.Now().Add(reconnectEvery)
	lostConn := p.conn
	if err := p.open(ctx, p.at+1); err != nil {
		return nil, fmt.Errorf("the connection to %s was lost (%w), and no node took a new one: %w", p.nodes[p.at].Addr, lostConn.Err(), err)
	}
	_ = lostConn.Close()
	return p.sender, nil
}

// sent is a message handed to the broker and its receipt, or the error
// that kept it from being sent.
type sent struct {
	m       *driver.Message
	receipt amqp.SendReceipt
	err     error
}

// message returns the AMQP message m is sent as: made on m's first use
// and kept in its DriverState, so that sending it again does not
// allocate.
func (p *producer) message(m *driver.Message) *amqp.Message {
	msg, ok := m.DriverState.(*amqp.Message)
	if !ok {
		msg = &amqp.Message{Header: &amqp.MessageHeader{Durable: p.durable}, Data: make([][]byte, 1)}
		m.DriverState = msg
	}
	msg.Data[0] = m.Value
	return msg
}

// Send implements driver.Producer. go-amqp encodes the message and
// writes it before SendWithReceipt returns; it waits while the broker
// gives the link no credit.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.ack(m, sendError{errors.New("producer closed")})
		return
	}
	p.pending.Add(1)
	sender, err := p.link(ctx)
	p.mu.Unlock()
	var receipt amqp.SendReceipt
	if err == nil {
		receipt, err = sender.SendWithReceipt(ctx, p.message(m), nil)
	}
	if err != nil {
		err = sendError{err}
	}
	p.sent <- sent{m: m, receipt: receipt, err: err}
}

// acknowledge calls the AckFunc for every message sent, once the broker
// settled it, until Close.
func (p *producer) acknowledge() {
	defer close(p.acked)
	for s := range p.sent {
		err := s.err
		if err == nil {
			err = settlement(s.receipt.Wait(context.Background()))
		}
		p.ack(s.m, err)
		p.pending.Done()
	}
}

// settlement is the error of a message the broker settled with state,
// or nil if it accepted it.
func settlement(state amqp.DeliveryState, err error) error {
	switch st := state.(type) {
	case nil:
		if err == nil {
			err = errors.New("settled without an outcome")
		}
		return sendError{err}
	case *amqp.StateAccepted:
		return nil
	case *amqp.StateRejected:
		if st.Error != nil {
			return sendError{st.Error}
		}
		return sendError{errors.New("rejected")}
	default:
		return sendError{fmt.Errorf("settled as %T", st)}
	}
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.pending) }

// Close implements driver.Producer: the connection closes, which fails
// every message the broker has not settled, and each is acknowledged or
// failed before Close returns.
func (p *producer) Close() {
	p.closing.Do(func() {
		p.mu.Lock()
		p.closed = true
		_ = p.conn.Close()
		p.mu.Unlock()
		p.pending.Wait()
		close(p.sent)
		<-p.acked
	})
}

// sendError gives send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error: the AMQP error's condition (amqp:... without
// its prefix), or the condition.
func (e sendError) Kind() string {
	var (
		ae *amqp.Error
		le *amqp.LinkError
		ce *amqp.ConnError
	)
	switch {
	case errors.As(e.err, &ae) && ae.Condition != "":
		return strings.ToUpper(strings.TrimPrefix(string(ae.Condition), "amqp:"))
	case errors.As(e.err, &le):
		return "LINK_CLOSED"
	case errors.As(e.err, &ce):
		return "CONNECTION_CLOSED"
	case errors.Is(e.err, context.Canceled):
		return "CANCELED"
	case errors.Is(e.err, context.DeadlineExceeded):
		return "TIMEOUT"
	default:
		return "other"
	}
}
