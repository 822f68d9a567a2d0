package rabbitmq

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// acknowledger records the multiple acks a consumer sends.
type acknowledger struct {
	mu   sync.Mutex
	tags []uint64
}

func (a *acknowledger) Ack(tag uint64, multiple bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if multiple {
		a.tags = append(a.tags, tag)
	}
	return nil
}

func (a *acknowledger) Nack(uint64, bool, bool) error { return nil }
func (a *acknowledger) Reject(uint64, bool) error     { return nil }

func (a *acknowledger) acked() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tags)
}

// TestTakeAcknowledges: a consumer acknowledges multipleAckEvery
// deliveries at once; what it took since is acknowledged at a 10 ms tick
// with no acknowledgement since the tick before, so within 20 ms of
// the last delivery, and not at a tick right after an acknowledgement
// by count; Close acknowledges what is left.
func TestTakeAcknowledges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ack := &acknowledger{}
		consumed, stopAt := 0, 0
		c := &consumer{d: &Driver{cfg: &config{multipleAcks: 50}}, stop: make(chan struct{})}
		c.consume = func(*driver.Delivery) {
			consumed++
			if consumed == stopAt {
				close(c.stop)
			}
		}
		deliveries := make(chan amqp.Delivery, 200)
		send := func(from, to uint64) {
			for tag := from; tag <= to; tag++ {
				deliveries <- amqp.Delivery{Acknowledger: ack, DeliveryTag: tag, Body: []byte("x")}
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.take(deliveries, 0)
		}()

		// 120 at once: two acks by count; the other 20 wait for a tick
		// with no ack since the one before.
		send(1, 120)
		synctest.Wait()
		if got := ack.acked(); !slices.Equal(got, []uint64{50, 100}) {
			t.Fatalf("after 120 deliveries, acks %v; want [50 100]", got)
		}
		time.Sleep(25 * time.Millisecond)
		synctest.Wait()
		if got := ack.acked(); !slices.Equal(got, []uint64{50, 100, 120}) {
			t.Fatalf("25 ms after the last delivery, acks %v; want [50 100 120]", got)
		}

		// 5 ms before a tick, 55 more: one ack by count at 170; the
		// tick 5 ms later leaves the other 5 to the tick after it.
		time.Sleep(5 * time.Millisecond) // 30 ms: ticks at 10, 20, 30 ms
		synctest.Wait()
		time.Sleep(5 * time.Millisecond) // 35 ms
		send(121, 175)
		synctest.Wait()
		time.Sleep(6 * time.Millisecond) // 41 ms: past the tick at 40
		synctest.Wait()
		if got := ack.acked(); !slices.Equal(got, []uint64{50, 100, 120, 170}) {
			t.Fatalf("at the tick after an ack by count, acks %v; want [50 100 120 170]", got)
		}
		time.Sleep(10 * time.Millisecond) // 51 ms: past the tick at 50
		synctest.Wait()
		if got := ack.acked(); !slices.Equal(got, []uint64{50, 100, 120, 170, 175}) {
			t.Fatalf("at the next tick, acks %v; want [50 100 120 170 175]", got)
		}

		// Close acknowledges what was taken and not yet acknowledged,
		// also when it finds a delivery waiting: that one is left to the
		// broker to deliver again. Stop comes while the 180th is being
		// consumed, with the 181st already waiting, so the consumer takes
		// the 181st and only then sees stop.
		stopAt = 180
		c.mu.Lock() // all six wait before the consumer takes the second
		send(176, 181)
		c.mu.Unlock()
		<-done
		if got := ack.acked(); got[len(got)-1] != 180 {
			t.Fatalf("after stop, acks %v; want the last at 180", got)
		}
		if consumed != 180 {
			t.Errorf("consumed %d deliveries; want 180", consumed)
		}
	})
}
