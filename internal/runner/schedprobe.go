package runner

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/metrics"
)

// The scheduling probe samples in bursts: probeBurst sleeps of probeSleep
// each, recorded, after one more that is not (the first wake-up after a
// gap finds the runtime idle, which a sender keeping a schedule is not),
// then a gap of probeGapMin to probeGapMax, drawn anew each time so that
// the bursts cannot keep step with a periodic disturbance. That is about
// 110 wake-ups a second, a fifth of sleeping probeSleep all the time
// (which cost 25 ms of CPU a second), while each recorded sleep is as
// short as a busy sender's wait.
const (
	probeSleep  = 2 * time.Millisecond
	probeBurst  = 10
	probeGapMin = 60 * time.Millisecond
	probeGapMax = 120 * time.Millisecond
)

// schedProbe measures how late this process's timers fire while the run
// measures: a goroutine sleeps probeSleep at a time, in bursts, and
// records how much longer each sleep took. A producer waiting for its next
// intended send time wakes the same way, so the probe's delay is the send
// lag any sender on this machine would have had, whatever brokerbench
// does.
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
		// sleep sleeps d and returns how much longer it took, or false
		// when ctx ended first.
		sleep := func(d time.Duration) (int64, bool) {
			from := clock.Now()
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return 0, false
			case <-timer.C:
			}
			return max(0, clock.Now()-from-int64(d)), true
		}
		for {
			for i := range probeBurst + 1 {
				late, ok := sleep(probeSleep)
				if !ok {
					return
				}
				if i > 0 {
					p.late.Record(late / 1000)
				}
			}
			if _, ok := sleep(probeGapMin + rand.N(probeGapMax-probeGapMin)); !ok {
				return
			}
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
