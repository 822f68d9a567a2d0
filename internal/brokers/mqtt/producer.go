package mqtt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewProducer implements driver.Driver: one connection, publishing at
// the configured QoS to the topic, which must have been created.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if err := d.exists(ctx, spec.Topic); err != nil {
		return nil, err
	}
	sess := state.NewInMemory()
	s, err := d.connect(ctx, "pub", nil, nil, paho.ClientConfig{Session: sess})
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	inFlight := max(1, spec.MaxInFlight)
	p := &producer{s: s, sess: sess, topic: d.topic(spec.Topic), qos: d.cfg.qos, ack: ack,
		queue: make(chan *driver.Message, inFlight), sent: make(chan outstanding, inFlight), done: make(chan struct{})}
	p.lost, p.lose = context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.cli.Done():
			p.lose()
		case <-p.lost.Done():
		}
	}()
	go p.publish()
	go p.acknowledge()
	return p, nil
}

// producer publishes in the order Send was called, from one goroutine
// (publish); another (acknowledge) waits for the server's answers in
// that order, which is the order the server gives them, and calls the
// AckFunc. At QoS 0 publish acknowledges each message itself once it is
// written, and acknowledge has nothing to do.
type producer struct {
	s     *session
	sess  *state.State
	topic string
	qos   byte
	ack   driver.AckFunc
	queue chan *driver.Message // Send -> publish
	sent  chan outstanding     // publish -> acknowledge
	done  chan struct{}        // closed once acknowledge returns
	// lost ends when the connection is lost or the producer closes:
	// what has no answer then fails.
	lost    context.Context
	lose    context.CancelFunc
	closing sync.Once
	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup
}

// outstanding is a message published at QoS 1 or 2, and where its
// answer comes (nil: err says why it was not published).
type outstanding struct {
	m      *driver.Message
	answer chan packets.ControlPacket
	err    error
}

// Send implements driver.Producer.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.ack(m, sendError{kind: "CLOSED", err: errClosed})
		return
	}
	p.pending.Add(1)
	// Held while queueing, so that Close cannot close the queue under a
	// Send.
	p.queue <- m
	p.mu.Unlock()
}

// publish writes every queued message to the connection, in order.
func (p *producer) publish() {
	defer close(p.sent)
	for m := range p.queue {
		pb := &packets.Publish{QoS: p.qos, Topic: p.topic, Payload: m.Value}
		if p.qos == 0 {
			var err error
			if p.lost.Err() != nil {
				err = sendError{kind: "NETWORK", err: paho.ErrConnectionLost}
			} else if _, werr := pb.WriteTo(p.s.conn); werr != nil {
				err = sendError{kind: "NETWORK", err: werr}
			}
			p.ack(m, err)
			p.pending.Done()
			continue
		}
		o := outstanding{m: m, answer: make(chan packets.ControlPacket, 1)}
		// The session gives the packet its id, and holds it until its
		// answer; it blocks while the server's receive maximum is in flight.
		if err := p.sess.AddToSession(p.lost, pb, o.answer); err != nil {
			o.answer, o.err = nil, sendError{kind: "NETWORK", err: err}
		} else if _, err := pb.WriteTo(p.s.conn); err != nil {
			o.err = sendError{kind: "NETWORK", err: err}
		}
		p.sent <- o
	}
}

// acknowledge calls the AckFunc of every message published at QoS 1 or
// 2 with the server's answer, in order.
func (p *producer) acknowledge() {
	defer close(p.done)
	for o := range p.sent {
		err := o.err
		if err == nil {
			select {
			case resp := <-o.answer:
				err = answerError(resp)
			case <-p.lost.Done():
				err = sendError{kind: "NETWORK", err: paho.ErrConnectionLost}
			}
		}
		p.ack(o.m, err)
		p.pending.Done()
	}
}

// answerError returns nil for an answer that completes a publication
// (PUBACK, PUBCOMP) with a success code, else the reason it failed.
func answerError(resp packets.ControlPacket) error {
	var code byte
	switch c := resp.Content.(type) {
	case *packets.Puback:
		code = c.ReasonCode
	case *packets.Pubcomp:
		code = c.ReasonCode
	case *packets.Pubrec:
		// A PUBREC ends a QoS 2 publication only when it refuses it.
		code = c.ReasonCode
	default:
		return sendError{kind: "NETWORK", err: errors.New("the connection closed before the server answered")}
	}
	if code >= 0x80 {
		return sendError{kind: fmt.Sprintf("0x%02X", code), err: fmt.Errorf("the server refused the message: reason code 0x%02X", code)}
	}
	return nil
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.pending) }

// Close implements driver.Producer: what has no answer yet fails, and
// every AckFunc call is made before it returns. At QoS 0 it waits (up to
// 5 s) for the server to have read what was written before it
// disconnects: Mosquitto 2.0 lost QoS 0 messages written just before
// the client closed its connection (one run in eight of 2,000 sent at
// once).
func (p *producer) Close() {
	p.closing.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		close(p.queue)
		p.lose()
		<-p.done
		if p.qos == 0 {
			p.barrier()
		}
		p.s.close()
		_ = p.sess.Close()
	})
}

// barrier returns once the server acknowledged a QoS 1 message to a
// topic of the producer's own, which no one subscribes to: it handles a
// connection's packets in order, so it has read every earlier one.
func (p *producer) barrier() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = p.s.cli.Publish(ctx, &paho.Publish{Topic: "brokerbench/barrier/" + randomID(), QoS: 1})
}

// sendError gives MQTT send errors a short kind for failure counts:
// CLOSED, NETWORK, or the server's reason code.
type sendError struct {
	kind string
	err  error
}

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error for failure counts.
func (e sendError) Kind() string { return e.kind }
