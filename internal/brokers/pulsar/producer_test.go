package pulsar

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// clientProducer stands in for the client's producer: it keeps what it
// was given, and the test calls back.
type clientProducer struct {
	pulsar.Producer // methods the driver does not call: nil, they panic
	mu              sync.Mutex
	sends           []clientSend
}

// clientSend is one SendAsync call.
type clientSend struct {
	ctx      context.Context
	key      string
	payload  []byte
	callback func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

func (c *clientProducer) SendAsync(ctx context.Context, m *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends = append(c.sends, clientSend{ctx: ctx, key: m.Key, payload: m.Payload, callback: cb})
}

func (c *clientProducer) FlushWithCtx(context.Context) error { return nil }
func (c *clientProducer) Close()                             {}

// callBack calls the client's callback of send i with err.
func (c *clientProducer) callBack(i int, err error) {
	c.mu.Lock()
	s := c.sends[i]
	c.mu.Unlock()
	s.callback(nil, nil, err)
}

type client struct{ pulsar.Client }

func (client) Close() {}

// acks records a producer's acknowledgements in order.
type acks struct {
	mu   sync.Mutex
	msgs []*driver.Message
	errs []error
}

func (a *acks) ack(m *driver.Message, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.msgs, a.errs = append(a.msgs, m), append(a.errs, err)
}

func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.msgs)
}

func newTestProducer() (*producer, *clientProducer, *acks) {
	cp, a := &clientProducer{}, &acks{}
	return &producer{cl: client{}, pp: cp, ack: a.ack}, cp, a
}

// TestProducerFlushWaitsForEveryAcknowledgement: Flush returns once the
// client has called back for every message sent, and not before; with
// none in flight at once; and with the context's error when it ends
// first.
func TestProducerFlushWaitsForEveryAcknowledgement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cp, a := newTestProducer()
		ctx := context.Background()
		if err := p.Flush(ctx); err != nil {
			t.Fatalf("Flush with nothing sent: %v", err)
		}
		msgs := []*driver.Message{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}
		for _, m := range msgs {
			p.Send(ctx, m)
		}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := p.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush with no acknowledgement = %v, want the context's deadline", err)
		}
		flushed := make(chan error, 1)
		go func() { flushed <- p.Flush(ctx) }()
		cp.callBack(0, nil)
		cp.callBack(1, nil)
		synctest.Wait()
		select {
		case err := <-flushed:
			t.Fatalf("Flush returned %v with one message unacknowledged", err)
		default:
		}
		cp.callBack(2, nil)
		if err := <-flushed; err != nil {
			t.Fatalf("Flush after every acknowledgement: %v", err)
		}
		for i, m := range a.msgs {
			if m != msgs[i] || a.errs[i] != nil {
				t.Errorf("acknowledgement %d: %q, %v; want %q, nil", i, m.Value, a.errs[i], msgs[i].Value)
			}
		}
	})
}

// TestProducerCloseFailsInFlightOnce: Close fails each message the
// client has not called back for, once; a callback the client makes
// after is not passed on, and none made before is repeated.
func TestProducerCloseFailsInFlightOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cp, a := newTestProducer()
		acked, inFlight := &driver.Message{Value: []byte("acked")}, &driver.Message{Value: []byte("in flight")}
		p.Send(context.Background(), acked)
		p.Send(context.Background(), inFlight)
		cp.callBack(0, nil)
		p.Close()
		cp.callBack(1, nil) // the client's late callback
		if len(a.msgs) != 2 || a.msgs[0] != acked || a.errs[0] != nil || a.msgs[1] != inFlight || !errors.Is(a.errs[1], pulsar.ErrProducerClosed) {
			t.Fatalf("acknowledgements %v %v, want the first acked and the second failed as closed, once each", a.msgs, a.errs)
		}
	})
}

// TestProducerSendAfterContextEnds: a message sent once the context has
// ended fails at once with its error and does not reach the client; the
// client otherwise gets a context that never ends, as it never waits.
func TestProducerSendAfterContextEnds(t *testing.T) {
	p, cp, a := newTestProducer()
	ctx, cancel := context.WithCancel(context.Background())
	p.Send(ctx, &driver.Message{Value: []byte("before")})
	cancel()
	p.Send(ctx, &driver.Message{Value: []byte("after")})
	if len(cp.sends) != 1 || cp.sends[0].ctx.Done() != nil {
		t.Fatalf("the client got %d messages (want 1), the first with a context that can end: %v", len(cp.sends), len(cp.sends) > 0 && cp.sends[0].ctx.Done() != nil)
	}
	if a.count() != 1 || !errors.Is(a.errs[0], context.Canceled) {
		t.Fatalf("acknowledgements %v, want the second message failed with the context's error", a.errs)
	}
	cp.callBack(0, nil)
	if err := p.Flush(context.Background()); err != nil {
		t.Fatalf("Flush once both messages are settled: %v", err)
	}
}

// TestProducerReusedMessageKey: a message sent again without a key
// reaches the client without the key of its previous send.
func TestProducerReusedMessageKey(t *testing.T) {
	p, cp, _ := newTestProducer()
	m := &driver.Message{Value: []byte("v"), Key: []byte("k")}
	p.Send(context.Background(), m)
	cp.callBack(0, nil)
	m.Key = nil
	p.Send(context.Background(), m)
	if cp.sends[0].key != "k" || cp.sends[1].key != "" {
		t.Fatalf("keys the client got: %q, %q; want \"k\", \"\"", cp.sends[0].key, cp.sends[1].key)
	}
}
