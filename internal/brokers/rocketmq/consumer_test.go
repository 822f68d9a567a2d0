package rocketmq

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// fakeSimpleConsumer hands out numbered messages in batches and records
// what was acknowledged. Hooks, when set, run at the start of each
// Receive and Ack call (from the consumer's goroutines).
type fakeSimpleConsumer struct {
	rmq.SimpleConsumer // nil: a call of anything else panics

	onReceive func(ctx context.Context)
	onAck     func()

	mu    sync.Mutex
	next  int // messages handed out
	total int // messages to hand out
	acked map[string]int
}

func newFakeSimpleConsumer(total int) *fakeSimpleConsumer {
	return &fakeSimpleConsumer{total: total, acked: map[string]int{}}
}

func (f *fakeSimpleConsumer) Receive(ctx context.Context, n int32, _ time.Duration) ([]*rmq.MessageView, error) {
	if f.onReceive != nil {
		f.onReceive(ctx)
	}
	f.mu.Lock()
	var msgs []*rmq.MessageView
	for ; len(msgs) < int(n) && f.next < f.total; f.next++ {
		msgs = append(msgs, &rmq.MessageView{ReceiptHandle: strconv.Itoa(f.next)})
	}
	f.mu.Unlock()
	if len(msgs) == 0 {
		// An empty queue: the long poll ends without a message.
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
		return nil, &rmq.ErrRpcStatus{Code: 40401, Message: "no new message"}
	}
	return msgs, nil
}

func (f *fakeSimpleConsumer) Ack(_ context.Context, mv *rmq.MessageView) error {
	if f.onAck != nil {
		f.onAck()
	}
	f.mu.Lock()
	f.acked[mv.ReceiptHandle]++
	f.mu.Unlock()
	return nil
}

func (f *fakeSimpleConsumer) GracefulStop() error { return nil }

// within fails the test unless ch is closed within a bound generous
// enough for a busy machine.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not within 30 s", what)
	}
}

// TestConsumerReceiveCallsInFlight: a consumer has as many receive calls
// waiting for the proxy at once as it has loops.
func TestConsumerReceiveCallsInFlight(t *testing.T) {
	const loops = 8
	f := newFakeSimpleConsumer(0)
	var mu sync.Mutex
	waiting := 0
	all := make(chan struct{})
	f.onReceive = func(ctx context.Context) {
		mu.Lock()
		if waiting++; waiting == loops {
			close(all)
		}
		mu.Unlock()
		// Every call waits for the others: it returns only when all
		// loops are in a call at once (or the consumer closes).
		select {
		case <-all:
		case <-ctx.Done():
		}
	}
	c := startConsumer(f, func(*driver.Delivery) {}, loops, 32, time.Minute)
	defer c.Close()
	within(t, all, "8 receive calls in flight at once")
}

// TestConsumerReceivesWhileAcknowledging: a loop's next receive call is
// sent while its batch's acknowledgements are unanswered, and Close
// returns only once they are answered.
func TestConsumerReceivesWhileAcknowledging(t *testing.T) {
	f := newFakeSimpleConsumer(64)
	release := make(chan struct{})
	f.onAck = func() { <-release }
	calls := 0
	second := make(chan struct{})
	f.onReceive = func(context.Context) {
		if calls++; calls == 2 {
			close(second)
		}
	}
	var consumed int
	c := startConsumer(f, func(*driver.Delivery) { consumed++ }, 1, 32, time.Minute)
	// The first batch's acknowledgements hang until released.
	within(t, second, "a second receive call while the first batch's acknowledgements are unanswered")
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned with acknowledgements unanswered")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	within(t, closed, "Close once the acknowledgements are answered")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != consumed {
		t.Errorf("consumed %d messages, acknowledged %d", consumed, len(f.acked))
	}
}

// TestConsumerAcknowledgesEachMessageOnce: every message received is
// consumed once and acknowledged once, by loops that share the work.
func TestConsumerAcknowledgesEachMessageOnce(t *testing.T) {
	const total = 10_000
	f := newFakeSimpleConsumer(total)
	seen := 0
	all := make(chan struct{})
	c := startConsumer(f, func(*driver.Delivery) {
		// consume is called serially: no lock here (the race detector
		// would see one missing).
		if seen++; seen == total {
			close(all)
		}
	}, 16, 32, time.Minute)
	within(t, all, "every message consumed")
	c.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != total {
		t.Errorf("%d of %d messages acknowledged", len(f.acked), total)
	}
	for h, n := range f.acked {
		if n != 1 {
			t.Errorf("message %s acknowledged %d times", h, n)
		}
	}
}
