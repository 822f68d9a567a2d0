package runner

import (
	"context"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// outageWatch is how often the outage watcher looks at the producers'
// acknowledgement counts, and minOutage the shortest stretch without any
// acknowledgement that it records.
const (
	outageWatch = 10 * time.Millisecond
	minOutage   = 100 * time.Millisecond
)

// outage is a stretch, in clock nanoseconds, in which no producer received
// an acknowledgement while messages were in flight or sends failed, up to
// the next acknowledgement; inFlight is how many were in flight when last
// seen under way.
type outage struct {
	from, to int64
	inFlight int64
}

// outages records the stretches without acknowledgements from the start
// of the measurement, to the resolution of outageWatch.
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
	go func() {
		defer close(o.done)
		tick := time.NewTicker(outageWatch)
		defer tick.Stop()
		var open *outage
		// last is the clock time at which the acknowledgement count was
		// last seen to change, lastAcked that count; lastFailed is the
		// failure count at the previous look.
		var last, lastAcked, lastFailed int64
		for {
			select {
			case <-ctx.Done():
				if open != nil {
					o.add(*open)
				}
				return
			case <-tick.C:
			}
			now, acked, failed, inFlight := clock.Now(), int64(0), int64(0), int64(0)
			for _, p := range r.producers {
				a, f := p.stats.acked.Load(), p.stats.failed.Load()
				acked += a
				failed += f
				inFlight += max(0, p.stats.sent.Load()-a-f)
			}
			answered := acked != lastAcked || last == 0
			if answered {
				lastAcked, last = acked, now
			}
			// The broker is asked and does not acknowledge: messages wait
			// in flight, or sends fail (a broker that refuses
			// connections fails them at once, leaving none in flight).
			asked := inFlight > 0 || failed != lastFailed
			lastFailed = failed
			switch {
			case open != nil && answered:
				// Only an acknowledgement ends an outage: sends that
				// fail in between do not.
				open.to = now
				o.add(*open)
				open = nil
			case open != nil:
				open.to = now
				if inFlight > 0 {
					open.inFlight = inFlight
				}
			case asked && now-last >= int64(minOutage):
				open = &outage{from: last, to: now, inFlight: inFlight}
			}
		}
	}()
	return o
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
