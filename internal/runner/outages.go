package runner

import (
	"context"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// outageWatch is how often the outage watcher looks at the producers'
// latest acknowledgements, and minOutage the shortest stretch without any
// that it records.
const (
	outageWatch = 10 * time.Millisecond
	minOutage   = 100 * time.Millisecond
)

// outage is a stretch, in clock nanoseconds, in which no producer received
// an acknowledgement while messages were in flight.
type outage struct{ from, to int64 }

// outages records the stretches without acknowledgements during a run with
// faults, to the resolution of outageWatch.
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
		for {
			select {
			case <-ctx.Done():
				if open != nil {
					o.add(*open)
				}
				return
			case <-tick.C:
			}
			now, last, waiting := clock.Now(), int64(0), false
			for _, p := range r.producers {
				last = max(last, p.stats.lastAck.Load())
				waiting = waiting || p.stats.sent.Load() > p.stats.acked.Load()+p.stats.failed.Load()
			}
			switch {
			case waiting && last > 0 && now-last >= int64(minOutage):
				if open == nil {
					open = &outage{from: last}
				}
				open.to = now
			case open != nil:
				open.to = max(open.to, last)
				o.add(*open)
				open = nil
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
