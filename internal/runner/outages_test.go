package runner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// TestOutagesRecorded: a stretch without acknowledgements while messages
// are in flight is recorded from the last change of the acknowledgement
// count to the next, with the messages then in flight; a quiet stretch
// with nothing in flight is not an outage.
func TestOutagesRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &producerWorker{stats: newProducerStats()}
		r := &run{producers: []*producerWorker{p}}
		p.stats.sent.Store(10)
		p.stats.acked.Store(5)
		before := clock.Now()
		o := r.watchOutages(context.Background())
		time.Sleep(405 * time.Millisecond) // between two looks
		p.stats.acked.Store(10)
		time.Sleep(200 * time.Millisecond) // nothing in flight: no outage
		list := o.end()
		if len(list) != 1 {
			t.Fatalf("outages %+v: want one", list)
		}
		// Seen from the watcher's first look (10 ms in) to the look that
		// saw the acknowledgements (410 ms in).
		if d := time.Duration(list[0].to - list[0].from); d != 400*time.Millisecond {
			t.Errorf("outage of %s, want 400ms", d)
		}
		if list[0].inFlight != 5 {
			t.Errorf("%d in flight, want 5", list[0].inFlight)
		}
		if got := longestFrom(list, before+int64(100*time.Millisecond), clock.Now()); got != 0.4 {
			t.Errorf("longest outage under way at the fault: %.3f s", got)
		}
		if got := longestFrom(list, clock.Now(), clock.Now()+1); got != 0 {
			t.Errorf("an outage after it ended: %.3f s", got)
		}
	})
}

// TestOutageOfFailingSends: a broker that refuses connections fails
// sends at once, so now one message is in flight, now none. That is one
// outage from the last acknowledgement to the next, not one per moment
// with none in flight.
func TestOutageOfFailingSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &producerWorker{stats: newProducerStats()}
		r := &run{producers: []*producerWorker{p}}
		p.stats.sent.Store(100)
		p.stats.acked.Store(100)
		o := r.watchOutages(context.Background())
		time.Sleep(5 * time.Millisecond)
		// For 2 s, a send every 25 ms that fails 15 ms later.
		for range 80 {
			p.stats.sent.Add(1)
			time.Sleep(15 * time.Millisecond)
			p.stats.failed.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
		p.stats.sent.Add(1)
		time.Sleep(20 * time.Millisecond)
		p.stats.acked.Add(1) // the broker is back
		time.Sleep(200 * time.Millisecond)
		list := o.end()
		if len(list) != 1 {
			t.Fatalf("outages %+v: want one", list)
		}
		if d := time.Duration(list[0].to - list[0].from); d < 2*time.Second || d > 2100*time.Millisecond {
			t.Errorf("outage of %s, want the 2 s until the acknowledgement", d)
		}
	})
}

// TestWaitsUnderWayCount: a producer blocked on a full in-flight window,
// or in a Send, to the end of an interval has waited that long already;
// the finished wait then counts once.
func TestWaitsUnderWayCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &producerWorker{stats: newProducerStats(), free: newSlotPool(1)}
		stock, _ := w.free.take(context.Background(), nil) // the only slot
		done := make(chan struct{})
		go func() {
			w.free.take(context.Background(), stock[:0])
			close(done)
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		now := clock.Now()
		if got := time.Duration(w.waitedForBroker(now)); got != 3*time.Second {
			t.Errorf("waited %s while blocked 3s", got)
		}
		if got := time.Duration(w.longestWait(now)); got != 3*time.Second {
			t.Errorf("longest wait %s while blocked 3s", got)
		}
		time.Sleep(time.Second)
		w.free.put(0)
		<-done
		time.Sleep(time.Second)
		now = clock.Now()
		if got := time.Duration(w.waitedForBroker(now)); got != 4*time.Second {
			t.Errorf("waited %s after a 4s wait ended", got)
		}
		// A timed Send blocked for 2 s counts while under way.
		w.stats.sendingSince.Store(clock.Now())
		time.Sleep(2 * time.Second)
		now = clock.Now()
		if got, want := time.Duration(w.waitedForBroker(now)), 6*time.Second; got != want {
			t.Errorf("waited %s with a Send blocked 2s, want %s", got, want)
		}
	})
}
