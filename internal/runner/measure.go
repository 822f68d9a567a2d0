package runner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
)

// measure runs the load shape's producing phases, stops the producers and
// drains, then fills in results.
func (r *run) measure(ctx context.Context) error {
	ex := newExecutor(r)
	c := &collector{r: r, cur: newLatencies(), agg: newLatencies(), warm: newLatencies()}
	prodCtx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	c.pacing = r.pacing
	wg := r.startProducing(prodCtx, c)
	defer r.giveUpSending()
	interrupted, sentAll := ex.phases(ctx, c, ex.finished(prodCtx, wg))
	c.pacing = nil
	c.measureTo = c.lastAt
	measureEnd := c.last
	r.stopFaults()
	stopProducers()
	measureEnd = r.stopProducing(c, wg, sentAll, measureEnd)
	r.sentAll = sentAll
	return r.finishMeasuring(ctx, c, ex, interrupted, measureEnd)
}

// startDelay is how long after the run's origin the producers' schedules
// start, so that the first intended send time is never in the past.
const startDelay = time.Millisecond

// startProducing starts the producers at the run's origin (the start the
// coordinator set, for a part) and returns their wait group.
func (r *run) startProducing(prodCtx context.Context, c *collector) *sync.WaitGroup {
	wg := &sync.WaitGroup{}
	c.origin = clock.Now()
	if r.part != nil {
		c.origin = r.startAt
	}
	c.lastAt = c.origin
	start := c.origin + int64(startDelay)
	sendCtx, giveUp := context.WithCancel(r.cfg.Abandon)
	r.giveUpSending = giveUp
	for _, p := range r.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(prodCtx, sendCtx, start)
		}()
	}
	return wg
}

// stopProducing waits for the stopped producers, sampling meanwhile, and
// for a run that sent its whole limit, for its last acknowledgements,
// which then end its measurement. It returns the counters at the end of
// the measurement.
func (r *run) stopProducing(c *collector, wg *sync.WaitGroup, sentAll bool, measureEnd totals) totals {
	// A producer blocked in a send returns when the client takes the
	// message, which can take as long as the broker's backlog: sample
	// meanwhile. A broker that takes nothing more (its flow control: a
	// full disk, a memory alarm) would hold the run forever: after
	// DrainTimeout the sends are given up (their context ends) and fail.
	stopped := returned(wg)
	var gaveUp atomic.Bool
	giveUp := time.AfterFunc(r.cfg.DrainTimeout, func() {
		gaveUp.Store(true)
		r.giveUpSending()
	})
	phase := results.Drain
	if sentAll {
		phase = results.Measure
	}
	c.sampleUntil(r.cfg.Abandon, phase, stopped, nil, time.Time{})
	<-stopped
	if !giveUp.Stop() && gaveUp.Load() {
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("producers were still blocked in a send %s after they stopped: the broker took no more messages (its flow control: a full disk, a memory alarm?); those sends were given up and count as failed", r.cfg.DrainTimeout))
	}
	if sentAll && len(r.producers) > 0 {
		// A run that sent its message limit is measured until the last
		// acknowledgement, so the last messages' latencies and the time
		// they took are part of it.
		flushCtx, cancel := context.WithTimeout(r.cfg.Abandon, r.cfg.DrainTimeout)
		r.flushSampling(flushCtx, c, results.Measure)
		cancel()
		c.sample(results.Measure)
		c.measureTo, measureEnd = c.lastAt, c.last
	}
	return measureEnd
}

// finishMeasuring waits for outstanding acknowledgements, then for the
// consumers to catch up as ex's drain says, and fills in the results.
func (r *run) finishMeasuring(ctx context.Context, c *collector, ex executor, interrupted bool, measureEnd totals) error {
	// Wait for outstanding acknowledgements, then for consumers to catch
	// up: for DrainTimeout, or InterruptDrain after an interrupt, and not
	// at all once the run is abandoned.
	bound := r.cfg.DrainTimeout
	if interrupted {
		if r.cfg.InterruptDrain < bound {
			bound = r.cfg.InterruptDrain
		}
		r.logf("interrupted: producers stopped; waiting up to %s for acknowledgements and consumers (interrupt again to abandon)", bound)
	}
	waitCtx, cancelWait := context.WithTimeout(r.cfg.Abandon, bound)
	defer cancelWait()
	r.flushSampling(waitCtx, c, results.Drain)
	drainErr := ex.drain(waitCtx, c, bound)
	c.samplePending(results.Drain)
	r.drained = drainErr == nil && !interrupted
	r.summarise(c, measureEnd)
	switch {
	case interrupted:
		r.res.Partial, r.res.PartialReason = true, "interrupted: "+context.Cause(ctx).Error()
		return context.Cause(ctx)
	case drainErr != nil:
		r.res.Warnings = append(r.res.Warnings, drainErr.Error())
	}
	return nil
}

// flushSampling waits until ctx ends for every producer's
// acknowledgements, sampling intervals of phase meanwhile.
func (r *run) flushSampling(ctx context.Context, c *collector, phase results.Phase) {
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		r.flushWithin(ctx)
	}()
	c.sampleUntil(ctx, phase, flushed, nil, time.Time{})
	<-flushed
}

// flushWithin waits until ctx ends for every producer's acknowledgements.
func (r *run) flushWithin(ctx context.Context) {
	for _, p := range r.producers {
		if err := p.prod.Flush(ctx); err != nil {
			r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("flush producer %d: %v", p.id, err))
		}
	}
}

// totals is a snapshot of all counters.
type totals struct {
	sent, acked, failed, consumed, foreign int64
	// waitedForBroker is the producers' summed time waiting for a free
	// in-flight slot or for the client to take a message, in nanoseconds.
	waitedForBroker int64
	// lateGrowth and lateFromWaits are the producers' summed
	// producerStats of those names.
	lateGrowth, lateFromWaits int64
}

func (r *run) totals() totals {
	var t totals
	now := clock.Now()
	for _, p := range r.producers {
		t.sent += p.stats.sent.Load()
		t.acked += p.stats.acked.Load()
		t.failed += p.stats.failed.Load()
		t.waitedForBroker += p.waitedForBroker(now)
		t.lateGrowth += p.stats.lateGrowth.Load()
		t.lateFromWaits += p.stats.lateFromWaits.Load()
	}
	for _, c := range r.consumers {
		t.consumed += c.consumed.Load()
		t.foreign += c.foreign.Load()
	}
	return t
}
