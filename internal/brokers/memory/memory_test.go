package memory

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
)

// TestConformance: the reference driver passes the driver contract's
// conformance suite.
func TestConformance(t *testing.T) {
	b := NewBroker()
	brokertest.Run(t, "memory", drivertest.Target{
		Connect: func(*testing.T) driver.Driver { return b.NewDriver() },
		Unreachable: func(*testing.T) (driver.Driver, error) {
			gone := NewBroker()
			gone.Unreachable = true
			return gone.NewDriver(), nil
		},
	})
}

// timings records, by message index, when each message was acknowledged
// and when it was delivered.
type timings struct {
	mu             sync.Mutex
	acked, arrived map[uint64]time.Time
}

func newTimings() *timings {
	return &timings{acked: map[uint64]time.Time{}, arrived: map[uint64]time.Time{}}
}

func (tm *timings) ack(m *driver.Message, err error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if err == nil {
		tm.acked[binary.BigEndian.Uint64(m.Value)] = time.Now()
	}
}

func (tm *timings) deliver(d *driver.Delivery) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.arrived[binary.BigEndian.Uint64(d.Value)] = time.Now()
}

// exchange sends n messages, one every gap, from one producer of b to one
// consumer, and waits until all are acknowledged and delivered; it
// returns when each was sent, acknowledged and delivered. It must run in
// a synctest bubble that made b.
func exchange(t *testing.T, b *Broker, producers, n int, gap time.Duration) (sent []time.Time, tm *timings) {
	t.Helper()
	ctx := context.Background()
	d := b.NewDriver()
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	tm = newTimings()
	c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: "t", Subscription: "s"}, tm.deliver)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ps []driver.Producer
	for range producers {
		p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: "t", MaxInFlight: n}, tm.ack)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ps = append(ps, p)
	}
	sent = make([]time.Time, n)
	for i := range n {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(i))
		sent[i] = time.Now()
		ps[i%producers].Send(ctx, &driver.Message{Value: v})
		time.Sleep(gap)
	}
	for _, p := range ps {
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for {
		tm.mu.Lock()
		all := len(tm.arrived) == n
		tm.mu.Unlock()
		if all {
			return sent, tm
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDelay: with a one-way delay d, every acknowledgement and every
// delivery comes exactly 2d after the send.
func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker()
		b.Delay = 20 * time.Millisecond
		sent, tm := exchange(t, b, 1, 100, 3*time.Millisecond)
		for i, at := range sent {
			if got := tm.acked[uint64(i)].Sub(at); got != 40*time.Millisecond {
				t.Fatalf("message %d acknowledged %s after its send, want 40ms", i, got)
			}
			if got := tm.arrived[uint64(i)].Sub(at); got != 40*time.Millisecond {
				t.Fatalf("message %d delivered %s after its send, want 40ms", i, got)
			}
		}
	})
}

// TestCeiling: producers sending faster than the ceiling are held to it,
// over all of them together: 1000 messages at 500 per second take 2 s.
func TestCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker()
		b.Ceiling = 500
		start := time.Now()
		_, tm := exchange(t, b, 2, 1000, 0)
		var last time.Time
		for _, at := range tm.acked {
			if at.After(last) {
				last = at
			}
		}
		// The first message is stored at once, each later one 2 ms after
		// the one before.
		if took := last.Sub(start); took != 999*2*time.Millisecond {
			t.Errorf("the last of 1000 messages was acknowledged after %s; at 500/s, want 1.998s", took)
		}
	})
}
