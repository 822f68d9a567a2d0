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
	// calledBeforeClose is the number of callbacks made when Close was
	// called; -1 until then.
	calledBeforeClose int
	called            int
}

// clientSend is one SendAsync call.
type clientSend struct {
	ctx      context.Context
	msg      *pulsar.ProducerMessage
	key      string
	payload  []byte
	callback func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

func (c *clientProducer) SendAsync(ctx context.Context, m *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends = append(c.sends, clientSend{ctx: ctx, msg: m, key: m.Key, payload: m.Payload, callback: cb})
}

func (c *clientProducer) FlushWithCtx(context.Context) error { return nil }

func (c *clientProducer) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calledBeforeClose = c.called
}

// closedAfter reports whether Close was called after n callbacks.
func (c *clientProducer) closedAfter(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calledBeforeClose >= n
}

// callBack calls the client's callback of send i with err.
func (c *clientProducer) callBack(i int, err error) {
	c.mu.Lock()
	s := c.sends[i]
	c.called++
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
	cp, a := &clientProducer{calledBeforeClose: -1}, &acks{}
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

// TestProducerCloseWaitsForTheClient: Close lets the client call back
// for the messages it holds while it keeps doing so, so that they are
// acknowledged rather than failed, and closes the client's producer
// only after; it stops waiting once the client is still for a second.
func TestProducerCloseWaitsForTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cp, a := newTestProducer()
		msgs := []*driver.Message{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}
		for _, m := range msgs {
			p.Send(context.Background(), m)
		}
		go func() {
			for i := range 2 { // the third never comes
				time.Sleep(500 * time.Millisecond)
				cp.callBack(i, nil)
			}
		}()
		start := time.Now()
		p.Close()
		if waited := time.Since(start); waited < 2*time.Second || waited > 2*time.Second+100*time.Millisecond {
			t.Errorf("Close returned after %v; want a second after the last callback, at 2s", waited)
		}
		if !cp.closedAfter(2) {
			t.Error("the client's producer was closed before its callbacks came")
		}
		if len(a.msgs) != 3 || a.errs[0] != nil || a.errs[1] != nil || !errors.Is(a.errs[2], pulsar.ErrProducerClosed) {
			t.Fatalf("acknowledgements %v; want the first two acknowledged, the third failed as closed", a.errs)
		}
	})
}

// TestProducerSendTimeout: with producer.sendTimeoutMs, a message the
// client has not called back for within it fails with the client's
// ErrSendTimeout, once; the client's late callback is not passed on,
// and the message sent again goes in a new slot, as the client may
// still hold the old one.
func TestProducerSendTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cp, a := newTestProducer()
		p.startTimeouts(time.Second)
		m := &driver.Message{Value: []byte("slow")}
		p.Send(context.Background(), m)
		time.Sleep(900 * time.Millisecond)
		if a.count() != 0 {
			t.Fatalf("failed after 0.9 s of a 1 s timeout: %v", a.errs)
		}
		time.Sleep(300 * time.Millisecond)
		if a.count() != 1 || !errors.Is(a.errs[0], pulsar.ErrSendTimeout) {
			t.Fatalf("acknowledgements after 1.2 s: %v; want one, the client's send timeout", a.errs)
		}
		cp.callBack(0, nil) // the client's late receipt
		p.Send(context.Background(), m)
		cp.callBack(1, nil)
		if a.count() != 2 || a.errs[1] != nil || a.msgs[1] != m {
			t.Fatalf("acknowledgements %v; want the message sent again acknowledged, once", a.errs)
		}
		if cp.sends[0].msg == cp.sends[1].msg {
			t.Error("the message sent again reused the client message the client may still hold")
		}
		p.Close()
	})
}
