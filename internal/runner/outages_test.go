package runner

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// testProducer is a producer whose messages a test sends, acknowledges
// and fails by hand, through the producer's own acknowledgement path.
type testProducer struct {
	*producerWorker
	inFlight []int // slots of the messages in flight
}

func newTestProducer() *testProducer {
	return &testProducer{producerWorker: newProducerWorker(0, nil, 0, nil, [][]byte{make([]byte, 100)}, 1000)}
}

// send puts n messages in flight.
func (p *testProducer) send(n int) {
	for range n {
		if len(p.stock) == 0 {
			p.stock, _ = p.free.take(context.Background(), p.stock)
		}
		p.inFlight = append(p.inFlight, p.stock[len(p.stock)-1])
		p.stock = p.stock[:len(p.stock)-1]
	}
	p.stats.sent.Add(int64(n))
}

// answer acknowledges (err nil) or fails n messages in flight now, and
// returns the clock time.
func (p *testProducer) answer(n int, err error) int64 {
	now := clock.Now()
	for range n {
		slot := p.inFlight[0]
		p.inFlight = p.inFlight[1:]
		p.onAck(&p.slots[slot].msg, err)
	}
	return now
}

// TestOutagesRecorded: a stretch without acknowledgements while messages
// are in flight is recorded from the last acknowledgement before it to
// the first after it, at their clock times, whenever the watcher looks,
// with the messages then in flight; a quiet stretch with nothing in
// flight is not an outage.
func TestOutagesRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProducer()
		r := &run{producers: []*producerWorker{p.producerWorker}}
		p.send(10)
		o := r.watchOutages(context.Background())
		time.Sleep(3 * time.Millisecond)
		from := p.answer(5, nil)
		time.Sleep(403 * time.Millisecond) // ends between two looks
		to := p.answer(3, nil)
		time.Sleep(7 * time.Millisecond)
		p.answer(2, nil)                   // before the next look: not the end
		time.Sleep(400 * time.Millisecond) // nothing in flight: no outage
		list := o.end()
		if len(list) != 1 {
			t.Fatalf("outages %+v: want one", list)
		}
		if list[0].from != from || list[0].to != to {
			t.Errorf("outage from %d to %d ns, want the acknowledgements' times %d to %d", list[0].from, list[0].to, from, to)
		}
		if list[0].inFlight != 5 {
			t.Errorf("%d in flight, want 5", list[0].inFlight)
		}
		if got := longestFrom(list, from+int64(100*time.Millisecond), clock.Now()); got != 0.403 {
			t.Errorf("longest outage under way at the fault: %.3f s", got)
		}
		if got := longestFrom(list, clock.Now(), clock.Now()+1); got != 0 {
			t.Errorf("an outage after it ended: %.3f s", got)
		}
	})
}

// TestShortOutages: a stretch of minOutage or more without
// acknowledgements is recorded even when it ends before any look saw it
// last minOutage; a shorter one is not.
func TestShortOutages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProducer()
		r := &run{producers: []*producerWorker{p.producerWorker}}
		p.send(10)
		o := r.watchOutages(context.Background())
		// Looks at 50, 100, 150 ms...: the one at 100 ms sees 88 ms
		// without an acknowledgement, the next one none.
		time.Sleep(12 * time.Millisecond)
		from := p.answer(1, nil)
		time.Sleep(120 * time.Millisecond)
		to := p.answer(1, nil)
		time.Sleep(90 * time.Millisecond) // too short
		p.answer(1, nil)
		time.Sleep(300 * time.Millisecond) // with 7 in flight
		list := o.end()
		if len(list) != 2 {
			t.Fatalf("outages %+v: want the 120 ms one and the one under way at the end", list)
		}
		if list[0].from != from || list[0].to != to {
			t.Errorf("outage from %d to %d ns, want %d to %d", list[0].from, list[0].to, from, to)
		}
		if d := time.Duration(list[1].to - list[1].from); d != 300*time.Millisecond {
			t.Errorf("outage under way at the end lasted %s, want 300ms", d)
		}
	})
}

// TestOutageOfFailingSends: a broker that refuses connections fails
// sends at once, so now one message is in flight, now none. That is one
// outage from the last acknowledgement to the next, not one per moment
// with none in flight.
func TestOutageOfFailingSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProducer()
		r := &run{producers: []*producerWorker{p.producerWorker}}
		p.send(1)
		o := r.watchOutages(context.Background())
		time.Sleep(5 * time.Millisecond)
		from := p.answer(1, nil)
		// For 2 s, a send every 25 ms that fails 15 ms later.
		for range 80 {
			p.send(1)
			time.Sleep(15 * time.Millisecond)
			p.answer(1, errors.New("connection refused"))
			time.Sleep(10 * time.Millisecond)
		}
		p.send(1)
		time.Sleep(20 * time.Millisecond)
		to := p.answer(1, nil) // the broker is back
		time.Sleep(200 * time.Millisecond)
		list := o.end()
		if len(list) != 1 {
			t.Fatalf("outages %+v: want one", list)
		}
		if list[0].from != from || list[0].to != to {
			t.Errorf("outage from %d to %d ns, want the acknowledgements' times %d to %d", list[0].from, list[0].to, from, to)
		}
	})
}

// TestOutageOfAllProducers: an outage is a stretch in which no producer
// is acknowledged: from the latest acknowledgement of any to the earliest
// after it.
func TestOutageOfAllProducers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newTestProducer(), newTestProducer()
		r := &run{producers: []*producerWorker{a.producerWorker, b.producerWorker}}
		a.send(10)
		b.send(10)
		o := r.watchOutages(context.Background())
		time.Sleep(3 * time.Millisecond)
		a.answer(1, nil)
		time.Sleep(80 * time.Millisecond) // a alone waits longer than minOutage
		from := b.answer(1, nil)
		time.Sleep(250 * time.Millisecond)
		to := b.answer(1, nil)
		time.Sleep(time.Millisecond)
		a.answer(len(a.inFlight), nil)
		b.answer(len(b.inFlight), nil)
		time.Sleep(200 * time.Millisecond)
		list := o.end()
		if len(list) != 1 {
			t.Fatalf("outages %+v: want one", list)
		}
		if list[0].from != from || list[0].to != to {
			t.Errorf("outage from %d to %d ns, want %d to %d", list[0].from, list[0].to, from, to)
		}
		if list[0].inFlight != 18 {
			t.Errorf("%d in flight, want 18", list[0].inFlight)
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
