package runner

import (
	"context"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// outageWatch is how often the outage watcher looks at the producers, and
// minOutage the shortest stretch without any acknowledgement that it
// records. The watcher need not look often to place an outage: the
// acknowledgements themselves record their clock times (see
// producerStats.ackedAt). It looks often enough that every stretch of
// minOutage without acknowledgements holds a look at which it had lasted
// minOutage-outageWatch, and there it starts waiting for the next one.
const (
	outageWatch = 50 * time.Millisecond
	minOutage   = 100 * time.Millisecond
)

// outage is a stretch, in clock nanoseconds, in which no producer received
// an acknowledgement while messages were in flight or sends failed: from
// the last acknowledgement before it to the first after it (or to the end
// of the watch, if none came); inFlight is how many were in flight when
// last seen under way.
type outage struct {
	from, to int64
	inFlight int64
}

// outages records the stretches without acknowledgements from the start
// of the measurement, each from and to an acknowledgement's clock time.
type outages struct {
	mu   sync.Mutex
	list []outage
	stop context.CancelFunc
	done chan struct{}
}

// watchOutages starts recording outages of r's producers until stop.
func (r *run) watchOutages(ctx context.Context) *outages {
	ctx, cancel := context.WithCancel(ctx)
	o := &outages{stop: cancel, done: make(chan struct{})}
	w := &outageWatcher{producers: r.producers, o: o, start: clock.Now()}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(outageWatch)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				w.look(clock.Now())
				if w.open != nil {
					o.add(*w.open)
				}
				w.disarm()
				return
			case <-tick.C:
				w.look(clock.Now())
			}
		}
	}()
	return o
}

// outageWatcher is the outage watcher's state, used by its goroutine
// alone.
type outageWatcher struct {
	producers []*producerWorker
	o         *outages
	start     int64 // clock time the watch began
	// lastFailed is the failure count at the previous look.
	lastFailed int64
	// waiting is the clock time of the acknowledgement after which the
	// producers' gates wait for the next one (0 when they do not), and
	// inFlight the messages in flight when last seen since.
	waiting, inFlight int64
	// open is the outage under way, nil if none.
	open *outage
}

// look looks at the producers at clock time now.
func (w *outageWatcher) look(now int64) {
	failed, inFlight, last := int64(0), int64(0), w.start
	for _, p := range w.producers {
		a, f := p.stats.acked.Load(), p.stats.failed.Load()
		failed += f
		inFlight += max(0, p.stats.sent.Load()-a-f)
		last = max(last, p.stats.lastAck.Load())
	}
	// The broker is asked and does not acknowledge: messages wait in
	// flight, or sends fail (a broker that refuses connections fails them
	// at once, leaving none in flight).
	asked := inFlight > 0 || failed != w.lastFailed
	w.lastFailed = failed
	if w.waiting != 0 {
		if to, ok := w.resumed(); ok {
			// Only an acknowledgement ends an outage: sends that fail in
			// between do not. A stretch that reached minOutage between
			// two looks is one too: the acknowledgement that ended it
			// was in flight at its end.
			if w.open != nil || to-w.waiting >= int64(minOutage) {
				w.o.add(outage{from: w.waiting, to: to, inFlight: w.inFlight})
			}
			w.open = nil
			w.disarm()
		} else {
			if inFlight > 0 {
				w.inFlight = inFlight
			}
			if w.open == nil && asked && now-w.waiting >= int64(minOutage) {
				w.open = &outage{from: w.waiting}
			}
			if w.open != nil {
				w.open.to, w.open.inFlight = now, w.inFlight
			}
			return
		}
	}
	if asked && now-last >= int64(minOutage-outageWatch) {
		w.arm(last, inFlight)
		if w.waiting != 0 && now-last >= int64(minOutage) {
			w.open = &outage{from: last, to: now, inFlight: inFlight}
		}
	}
}

// arm makes every producer's gate wait for the first acknowledgement
// after clock time last, unless one came meanwhile. An acknowledgement
// whose lastAck the second reading misses passes the gate, which was
// armed before.
func (w *outageWatcher) arm(last, inFlight int64) {
	for _, p := range w.producers {
		p.stats.resumed.Store(-last)
	}
	for _, p := range w.producers {
		if p.stats.lastAck.Load() > last {
			w.disarm()
			return
		}
	}
	w.waiting, w.inFlight = last, inFlight
}

// resumed returns the clock time of the first acknowledgement the gates
// have passed, if any.
func (w *outageWatcher) resumed() (int64, bool) {
	first, ok := int64(0), false
	for _, p := range w.producers {
		if t := p.stats.resumed.Load(); t > 0 && (!ok || t < first) {
			first, ok = t, true
		}
	}
	return first, ok
}

// disarm stops the gates waiting.
func (w *outageWatcher) disarm() {
	for _, p := range w.producers {
		p.stats.resumed.Store(0)
	}
	w.waiting = 0
}

func (o *outages) add(x outage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, x)
}

// end stops the watcher and returns the outages.
func (o *outages) end() []outage {
	o.stop()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]outage(nil), o.list...)
}

// longestFrom returns the longest outage that began between from and to
// (clock nanoseconds), or that was under way at from, in seconds; 0 if none.
func longestFrom(list []outage, from, to int64) float64 {
	longest := int64(0)
	for _, x := range list {
		if x.to >= from && x.from <= to {
			longest = max(longest, x.to-x.from)
		}
	}
	return float64(longest) / 1e9
}
