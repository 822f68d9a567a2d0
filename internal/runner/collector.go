package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/results"
)

// latencies holds one stretch's histograms: publish latency (from the
// intended send time), service time (from the actual send time), send lag,
// end-to-end latency and transactions' commit latency.
type latencies struct {
	pub, svc, lag, e2e, commit *metrics.Counts
}

func newLatencies() latencies {
	return latencies{pub: metrics.NewCounts(), svc: metrics.NewCounts(), lag: metrics.NewCounts(), e2e: metrics.NewCounts(), commit: metrics.NewCounts()}
}

func (l latencies) merge(o latencies) {
	l.pub.Add(o.pub)
	l.svc.Add(o.svc)
	l.lag.Add(o.lag)
	l.e2e.Add(o.e2e)
	l.commit.Add(o.commit)
}

func (l latencies) reset() {
	l.pub.Reset()
	l.svc.Reset()
	l.lag.Reset()
	l.e2e.Reset()
	l.commit.Reset()
}

// summaries are one stretch's distributions as hdrhistogram-go
// histograms, for percentiles and encoding: made once per stretch.
type summaries struct {
	pub, svc, lag, e2e, commit *hdrhistogram.Histogram
}

func (l latencies) summaries() summaries {
	return summaries{pub: l.pub.Histogram(), svc: l.svc.Histogram(), lag: l.lag.Histogram(), e2e: l.e2e.Histogram(), commit: l.commit.Histogram()}
}

// encode returns the histograms encoded; one that cannot be encoded is
// left empty and named in the error.
func (l latencies) encode() (results.Histograms, error) {
	var out results.Histograms
	var errs []error
	encoded := map[*string]*metrics.Counts{
		&out.PublishLatency: l.pub, &out.ServiceTime: l.svc, &out.SendLag: l.lag, &out.EndToEndLatency: l.e2e,
	}
	if l.commit.Total() > 0 {
		encoded[&out.CommitLatency] = l.commit
	}
	for dst, c := range encoded {
		enc, err := c.Encode()
		*dst = enc
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// collector turns counters and histograms into intervals and the
// measurement aggregate.
type collector struct {
	r                      *run
	origin                 int64 // clock ns when producing started
	last                   totals
	lastAt                 int64
	cur                    latencies // current interval
	agg                    latencies // measurement phase
	warm                   latencies // warmup, in case the run ends in it
	measureStart           totals
	measureFrom, measureTo int64
	measuring              bool // the measurement phase has begun
	// lateMax is the largest delay, in the measurement phase, between a
	// sample's due time and the moment it was taken: a process that cannot
	// sample on time cannot send on time either.
	lateMax int64
	// pacing is the producers' total target while they produce (the
	// workload's Pacing), for each interval's target rate; nil otherwise.
	pacing pacer.Profile
}

// sample ends the current interval now, in phase: every histogram is cut at
// once, with the counters beside them, before the slower merging, so that
// an interval's bounds are exact however many clients there are.
func (c *collector) sample(phase results.Phase) results.Interval {
	now := clock.Now()
	c.eachHistogram(func(h *metrics.Histogram, _ ...*metrics.Counts) { h.Cut() })
	t := c.r.totals()
	c.eachHistogram(func(h *metrics.Histogram, dst ...*metrics.Counts) { h.FoldInto(dst...) })
	// Interval counts come from the histograms, which hold exactly one entry
	// per send (send lag), acknowledgement (publish latency) and consumed
	// message (end-to-end), so counts and latencies always cover the same
	// messages. Counters give the failures and the running totals.
	cur := c.cur.summaries()
	iv := results.Interval{
		StartSeconds: float64(c.lastAt-c.origin) / 1e9, EndSeconds: float64(now-c.origin) / 1e9, Phase: phase,
		Backlog:    max(0, t.sent*int64(c.r.w.SubscriptionsPerTopic)-t.consumed),
		TargetRate: c.targetRate(c.lastAt, now),
		Traffic:    traffic(cur, t.failed-c.last.failed, float64(now-c.lastAt)/1e9, c.r.w.MessageSize),
	}
	if c.r.cfg.SampleSystem != nil {
		iv.System = c.r.cfg.SampleSystem()
	}
	switch phase {
	case results.Measure, results.BacklogDrain:
		c.agg.merge(c.cur)
	case results.Warmup:
		c.warm.merge(c.cur)
	}
	if j := c.r.cfg.Journal; j != nil {
		h, _ := c.cur.encode() // an interval without histograms still has its counts
		j.Interval(iv, h)
	}
	c.cur.reset()
	c.last, c.lastAt = t, now
	c.r.res.Intervals = append(c.r.res.Intervals, iv)
	if c.r.cfg.Progress != nil {
		c.r.cfg.Progress(iv)
	}
	return iv
}

// targetRate returns the producers' mean target rate between clock times
// from and to; 0 when they are not paced.
func (c *collector) targetRate(from, to int64) float64 {
	return meanTarget(c.pacing, c.origin, from, to)
}

// meanTarget returns p's mean rate between clock times from and to, for
// producers whose schedules start startDelay after origin; 0 for a nil p.
func meanTarget(p pacer.Profile, origin, from, to int64) float64 {
	if p == nil {
		return 0
	}
	start := origin + int64(startDelay)
	return pacer.TargetRate(p, time.Duration(from-start), time.Duration(to-start))
}

// eachHistogram calls f with every client histogram and the interval
// counts its lanes drain into.
func (c *collector) eachHistogram(f func(*metrics.Histogram, ...*metrics.Counts)) {
	for _, p := range c.r.producers {
		f(p.stats.acks, c.cur.pub, c.cur.svc) // publishLane, serviceLane
		f(p.stats.sendLag, c.cur.lag)
		if p.txn != nil {
			f(p.txn.commits, c.cur.commit)
		}
	}
	for _, s := range c.r.consumers {
		f(s.endToEnd, c.cur.e2e)
	}
}

// sampleDue samples at a scheduled boundary (clock ns) and records how late
// the sample was, if the measurement phase has begun.
func (c *collector) sampleDue(phase results.Phase, due int64) {
	if late := clock.Now() - due; late > c.lateMax && (c.measuring || phase == results.Measure) {
		c.lateMax = late
	}
	c.sample(phase)
}

// samplePending samples an interval of phase if anything happened since
// the last sample, so a run ends on an interval boundary without adding an
// empty one.
func (c *collector) samplePending(phase results.Phase) {
	t := c.r.totals()
	t.waitedForBroker = c.last.waitedForBroker // time passing is not news
	if t != c.last {
		c.sample(phase)
	}
}

// measureWarmup makes the warmup the measured phase, for a run whose
// producers reached their message limit before the warmup ended: a short
// run still measures, and says how.
func (c *collector) measureWarmup() {
	c.agg, c.warm = c.warm, c.agg
	c.measureStart, c.measureFrom, c.measuring = totals{}, c.origin, true
	for i := range c.r.res.Intervals {
		if c.r.res.Intervals[i].Phase == results.Warmup {
			c.r.res.Intervals[i].Phase = results.Measure
		}
	}
	c.r.res.Warnings = append(c.r.res.Warnings, fmt.Sprintf(
		"the producers sent their %d messages within the %s warmup: the whole run is measured, warmup included", c.r.w.MessageLimit, c.r.w.Warmup))
}

// stopReason says why sampleUntil returned.
type stopReason int

const (
	conditionMet stopReason = iota
	channelClosed
	timedOut
	interruptedStop
)

// sampleUntil samples an interval of phase every Interval until done
// reports true (checked every donePoll; nil for never), closed is closed
// (nil for never), the deadline passes (zero for none) or ctx ends.
// Whatever the phase waits for, intervals keep coming on the wall clock,
// each sampled when its boundary's timer fires. It does not sample when it
// stops: a caller whose phase ends there samples itself.
func (c *collector) sampleUntil(ctx context.Context, phase results.Phase, closed <-chan struct{}, done func() bool, deadline time.Time) stopReason {
	boundary := time.NewTimer(time.Hour)
	defer boundary.Stop()
	// Only a condition is polled: the channels and the deadline wake the
	// loop themselves.
	var poll, timeout <-chan time.Time
	if done != nil {
		t := time.NewTicker(donePoll)
		defer t.Stop()
		poll = t.C
	}
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	next := c.lastAt + int64(c.r.cfg.Interval)
	for {
		boundary.Reset(time.Duration(next - clock.Now()))
		reason := stopReason(-1)
		select {
		case <-ctx.Done():
			reason = interruptedStop
		case <-closed:
			reason = channelClosed
		case <-poll:
			if done() {
				reason = conditionMet
			}
		case <-timeout:
			reason = timedOut
			if done != nil && done() {
				reason = conditionMet
			}
		case <-boundary.C:
		}
		// An interrupt may also close what the phase waits for (it stops
		// the producers): it is still an interrupt.
		if ctx.Err() != nil {
			reason = interruptedStop
		}
		if reason >= 0 {
			return reason
		}
		if clock.Now() >= next {
			c.sampleDue(phase, next)
			next = c.lastAt + int64(c.r.cfg.Interval)
		}
	}
}

// donePoll is how often sampleUntil checks its condition.
const donePoll = 10 * time.Millisecond
