package runner

import (
	"context"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/metrics"
)

// probeSleep is how long the scheduling probe sleeps at a time: 500
// wake-ups a second, a few thousandths of a core.
const probeSleep = 2 * time.Millisecond

// schedProbe measures how late this process's timers fire while the run
// measures: a goroutine sleeps probeSleep at a time and records how much
// longer each sleep took. A producer waiting for its next intended send
// time wakes the same way, so the probe's delay is the send lag any
// sender on this machine would have had, whatever brokerbench does.
type schedProbe struct {
	stop context.CancelFunc
	done chan struct{}
	late *metrics.Counts // written by the probe goroutine until done
}

// startSchedProbe starts a probe that runs until end or until ctx ends.
func startSchedProbe(ctx context.Context) *schedProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &schedProbe{stop: cancel, done: make(chan struct{}), late: metrics.NewCounts()}
	go func() {
		defer close(p.done)
		timer := time.NewTimer(probeSleep)
		defer timer.Stop()
		for {
			from := clock.Now()
			timer.Reset(probeSleep)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			p.late.Record(max(0, clock.Now()-from-int64(probeSleep)) / 1000)
		}
	}()
	return p
}

// end stops the probe and summarises the delays it saw; nil if it saw
// none.
func (p *schedProbe) end() *metrics.Latency {
	p.stop()
	<-p.done
	if p.late.Total() == 0 {
		return nil
	}
	l := metrics.Summarize(p.late.Histogram())
	return &l
}
