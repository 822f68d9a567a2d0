package runner

import (
	"context"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
)

// timed is the common load shape: the producers send, at their pacers'
// schedule (a fixed rate, a rate profile or as fast as they can), through
// the warmup and the measurement, and the run ends when the duration is
// over or the producers have sent the message limit, then drains.
type timed struct{ r *run }

// finished implements executor: closed when the producers have returned.
func (e timed) finished(_ context.Context, producers *sync.WaitGroup) <-chan struct{} {
	return returned(producers)
}

// phases implements executor; consumers paused on existing topics resume
// as the producers start.
func (e timed) phases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool) {
	e.r.resumeConsumers()
	return e.r.timedPhases(ctx, c, finished)
}

// drain implements executor (see run.drainAcked).
func (e timed) drain(ctx context.Context, c *collector, bound time.Duration) error {
	return e.r.drainAcked(ctx, c, bound)
}

// resumeConsumers resumes the consumers setup paused.
func (r *run) resumeConsumers() {
	for _, p := range r.pausers {
		p.Resume()
	}
}

// timedPhases samples through the warmup and the measurement until the
// duration ends, the producers finish (sentAll) or ctx ends (interrupted).
func (r *run) timedPhases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool) {
	w := r.w
	warmupEnd := c.origin + int64(w.Warmup)
	end := warmupEnd + int64(w.Duration)
	r.logf("producing: warmup %s, measurement %s", w.Warmup, w.Duration)
	c.measureFrom, c.measuring = c.origin, w.Warmup == 0
	if c.measuring {
		r.startMeasuring(ctx, c)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := c.origin
	for {
		// Sample at every interval boundary, and also exactly at the end of
		// the warmup, so that no interval straddles two phases.
		next += int64(r.cfg.Interval)
		boundary := min(next, end)
		if c.lastAt < warmupEnd && boundary > warmupEnd {
			boundary, next = warmupEnd, warmupEnd
		}
		timer.Reset(time.Duration(boundary - clock.Now()))
		producersDone := false
		select {
		case <-ctx.Done():
			interrupted = true
		case <-finished:
			producersDone = true
		case <-timer.C:
		}
		// An interrupt also stops the producers, which may close finished
		// first: it is still an interrupt.
		if ctx.Err() != nil {
			interrupted, producersDone = true, false
		}
		phase := results.Measure
		if c.lastAt < warmupEnd {
			phase = results.Warmup
		}
		c.sampleDue(phase, boundary)
		if phase == results.Warmup && c.lastAt >= warmupEnd {
			c.measureStart, c.measureFrom, c.measuring = c.last, c.lastAt, true
			// The measurement lasts its duration from the sample that
			// began it, even if that sample came late, and its intervals
			// count from there.
			end, next = c.lastAt+int64(w.Duration), c.lastAt
			r.startMeasuring(ctx, c)
		}
		if producersDone && !c.measuring {
			c.measureWarmup()
		}
		// After a sample more than half an interval late the schedule
		// starts again from it, rather than catching up with a burst of
		// short intervals.
		if c.lastAt-next > int64(r.cfg.Interval)/2 {
			next = c.lastAt
		}
		if interrupted || producersDone || c.lastAt >= end {
			return interrupted, producersDone
		}
	}
}
