package runner

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
)

// backlogMode reports whether the workload is a backlog test.
func (r *run) backlogMode() bool { return r.w.ConsumerBacklogSizeGB > 0 }

// backlog is the load shape of a backlog test (OMB's
// consumerBacklogSizeGB), with the consumers paused by setup: the producers
// fill each subscription's backlog to the target, the consumers resume, and
// the drain lasts until the backlog is down to the drain level. Producers
// keep their pace throughout (they stop only at their message limit), so
// the drain measures how fast consumers catch up under load. Each phase is
// bounded by BacklogTimeout. The drain is the measured phase.
type backlog struct{ r *run }

// finished implements executor: closed when the producers have returned,
// which ends the build phase early.
func (backlog) finished(_ context.Context, producers *sync.WaitGroup) <-chan struct{} {
	return returned(producers)
}

// phases implements executor; a backlog test never counts as having sent
// its whole limit, since its measurement is the drain.
func (e backlog) phases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool) {
	return e.r.backlogPhases(ctx, c, finished), false
}

// drain implements executor (see run.drainAcked).
func (e backlog) drain(ctx context.Context, c *collector, bound time.Duration) error {
	return e.r.drainAcked(ctx, c, bound)
}

// backlogPhases builds the backlog and drains it (see backlog), and
// reports whether ctx ended first.
func (r *run) backlogPhases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted bool) {
	w := r.w
	subs := int64(len(r.subs))
	target := int64(math.Round(w.ConsumerBacklogSizeGB * (1 << 30) / float64(w.MessageSize)))
	ratio := w.BacklogDrainRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	bt := &results.BacklogTest{TargetMessages: target, DrainedAtMessages: int64(float64(target) * (1 - ratio))}
	r.res.Backlog = bt
	backlog := func() int64 { t := r.totals(); return (t.acked*subs - t.consumed) / subs }
	r.logf("backlog test: building %d messages per subscription with consumers paused", target)

	start := clock.Now()
	stop := r.backlogPhase(ctx, c, results.BacklogBuild, finished, func() bool { return backlog() >= target })
	bt.BuildSeconds = float64(clock.Now()-start) / 1e9
	bt.PeakMessages = backlog()
	bt.Built = stop == conditionMet
	if stop == interruptedStop {
		return true
	}

	r.logf("backlog test: %d messages per subscription; resuming consumers", bt.PeakMessages)
	c.measureStart, c.measureFrom, c.measuring = c.last, c.lastAt, true
	r.startMeasuring(ctx, c)
	r.resumeConsumers()
	// While producers still send, messages between send and consumption
	// are always in the backlog: the drain is complete at the drain level
	// plus what was published in the last half second.
	recent := newRecentAcked(r, 500*time.Millisecond)
	drainStart := clock.Now()
	stop = r.backlogPhase(ctx, c, results.BacklogDrain, nil, func() bool {
		return backlog() <= bt.DrainedAtMessages+recent.within()
	})
	c.measureTo = c.lastAt
	bt.DrainSeconds = float64(clock.Now()-drainStart) / 1e9
	bt.Drained = stop == conditionMet
	if secs := float64(c.measureTo-c.measureFrom) / 1e9; secs > 0 {
		bt.DrainRate = float64(c.last.consumed-c.measureStart.consumed) / secs
		bt.DrainMBps = bt.DrainRate * float64(w.MessageSize) / 1e6
	}
	return stop == interruptedStop
}

// backlogPhase samples phase until done reports true, finished is closed,
// BacklogTimeout passes (with a warning) or ctx ends.
func (r *run) backlogPhase(ctx context.Context, c *collector, phase results.Phase, finished <-chan struct{}, done func() bool) stopReason {
	stop := c.sampleUntil(ctx, phase, finished, done, time.Now().Add(r.cfg.BacklogTimeout))
	c.sample(phase)
	if stop == timedOut {
		r.res.Warnings = append(r.res.Warnings, "backlog test: "+string(phase)+" phase did not finish within "+r.cfg.BacklogTimeout.String())
	}
	return stop
}

// recentAcked tracks how many messages were acknowledged in a recent window,
// from samples taken each time within is called.
type recentAcked struct {
	r       *run
	window  int64
	samples []ackSample
}

type ackSample struct{ at, acked int64 }

func newRecentAcked(r *run, window time.Duration) *recentAcked {
	return &recentAcked{r: r, window: int64(window)}
}

// within returns the acknowledgements in the window before now.
func (a *recentAcked) within() int64 {
	now, acked := clock.Now(), a.r.totals().acked
	a.samples = append(a.samples, ackSample{now, acked})
	for len(a.samples) > 1 && a.samples[0].at < now-a.window {
		a.samples = a.samples[1:]
	}
	return acked - a.samples[0].acked
}
