package distributed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
)

// mergeReady merges every interval that all workers still running have
// sent, in order.
func (c *coordinator) mergeReady() {
	for {
		ready, any := true, false
		for _, m := range c.members {
			switch {
			case len(m.intervals) > c.merged:
				any = true
			case !m.ended:
				ready = false
			}
		}
		if !ready || !any {
			return
		}
		c.mergeNext()
	}
}

// mergeRemaining merges the intervals left once every worker has ended.
func (c *coordinator) mergeRemaining() {
	for {
		any := false
		for _, m := range c.members {
			any = any || len(m.intervals) > c.merged
		}
		if !any {
			return
		}
		c.mergeNext()
	}
}

// mergeNext merges interval c.merged of the workers that sent it, and
// hands it to the journal and the progress function.
func (c *coordinator) mergeNext() {
	var parts []partInterval
	for _, m := range c.members {
		if len(m.intervals) > c.merged {
			parts = append(parts, m.intervals[c.merged])
		}
	}
	c.merged++
	var system *results.System
	if c.rc.SampleSystem != nil {
		system = c.rc.SampleSystem()
	}
	iv, h, err := mergeInterval(parts, c.rc.Workload.MessageSize, system)
	if err != nil {
		c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("interval %d: %v", c.merged, err))
	}
	// The backlog, as one process counts it: every message sent so far,
	// once per subscription, less every delivery so far.
	c.sentSoFar += iv.Sent
	c.consumedSoFar += iv.Consumed
	iv.Backlog = max(0, c.sentSoFar*int64(c.rc.Workload.SubscriptionsPerTopic)-c.consumedSoFar)
	c.res.Intervals = append(c.res.Intervals, iv)
	if c.rc.Journal != nil {
		c.rc.Journal.Interval(iv, h)
	}
	if c.rc.Progress != nil {
		c.rc.Progress(iv)
	}
}

// finish fills in the merged results once every worker has ended: the
// measurement, the counts and their reconciliation over all workers'
// records, the broker's count, the target's verdict and each worker's
// share. It returns an error naming the workers that failed or were lost.
func (c *coordinator) finish() error {
	w := c.rc.Workload
	res := c.res
	var runs []*results.Run
	var producers []int
	var failed []string
	for i, m := range c.members {
		if m.err != "" {
			failed = append(failed, fmt.Sprintf("worker %d (%s) %s", i+1, m.url, m.err))
		}
		if m.part == nil {
			continue
		}
		runs = append(runs, m.part.Run)
		producers = append(producers, len(m.share.producers))
		addCounts(&res.Counts, m.part.Run.Counts)
		for _, wn := range m.part.Run.Warnings {
			res.Warnings = append(res.Warnings, fmt.Sprintf("worker %d: %s", i+1, wn))
		}
		// A worker the coordinator stopped (an interrupt) returns the
		// interrupt as its error: the run is partial, not failed.
		if m.part.RunError != "" && !c.stopped {
			failed = append(failed, fmt.Sprintf("worker %d (%s): %s", i+1, m.url, m.part.RunError))
		}
	}
	var errs []error
	if len(runs) > 0 {
		agg, h, err := mergeMeasured(runs, producers, w.MessageSize)
		if err != nil {
			res.Warnings = append(res.Warnings, "merging the measurement: "+err.Error())
		}
		res.Measured, res.Histograms = agg, h
	}
	res.Measured.System = results.MeanSystem(res.Intervals)
	// Each worker watched its own producers and its own timers: the
	// longest wait and the worst scheduling delay are the run's. An
	// outage is a stretch without acknowledgements on every worker at
	// once, which no one worker saw, so outages are each worker's own.
	for _, run := range runs {
		m := run.Measured
		res.Measured.LongestBrokerWaitMs = max(res.Measured.LongestBrokerWaitMs, m.LongestBrokerWaitMs)
		if d := m.SchedulingDelay; d != nil && (res.Measured.SchedulingDelay == nil || d.P99 > res.Measured.SchedulingDelay.P99) {
			res.Measured.SchedulingDelay = d
		}
	}
	drained := c.caught && len(failed) == 0 && !res.Partial
	c.reconcile(drained)
	c.countStored(len(failed) > 0)
	sentAll := c.allSentTold
	if rate := w.ProducerRate; rate > 0 && w.Producers() > 0 {
		res.Target = runner.JudgeTarget(&res.Measured, runner.TargetSpec{Rate: rate, MaxSendLag: c.rc.MaxSendLag, Interval: c.rc.Interval, SentAll: sentAll})
	}
	res.Distributed = c.distribution()
	if len(failed) > 0 {
		if !res.Partial {
			res.Partial, res.PartialReason = true, strings.Join(failed, "; ")
		}
		errs = append(errs, errors.New(strings.Join(failed, "; ")))
	}
	return errors.Join(errs...)
}

// reconcile merges every worker's delivery records per subscription and
// reconciles them with every producer's outcome, exactly as one process
// would. A lost worker's producers have unknown outcomes.
func (c *coordinator) reconcile(drained bool) {
	w := c.rc.Workload
	outcomes := make([]accounting.Outcome, w.Producers())
	for p := range outcomes {
		outcomes[p].Unknown = true
	}
	owner := c.producerOwners()
	var records []runner.Record
	for t := range w.Topics {
		for s := range w.SubscriptionsPerTopic {
			records = append(records, runner.Record{Name: runner.SubscriptionName(c.rc.ID, t, s), Topic: t, Deliveries: accounting.NewSubscription(w.Producers())})
		}
	}
	for i, m := range c.members {
		if m.part == nil {
			continue
		}
		for p, o := range m.part.Outcomes {
			if p < len(outcomes) && owner[p] == i {
				outcomes[p] = o
			}
		}
		for k, d := range m.part.Deliveries {
			if k < len(records) && d != nil {
				records[k].Deliveries.Merge(d)
			}
		}
	}
	unknown := 0
	for _, o := range outcomes {
		if o.Unknown {
			unknown++
		}
	}
	if unknown > 0 {
		c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("%d producers' outcomes are unknown (their worker was lost): their messages count as delivered when received, and never as lost", unknown))
	}
	rr := runner.Reread{Ctx: c.rc.Abandon, Timeout: c.rc.RereadTimeout}
	rr.Driver, _ = c.rc.Driver.(driver.Rereader)
	for t := range w.Topics {
		name := runner.TopicName(c.rc.ID, t)
		if t < len(c.rc.ExistingTopics) {
			name = c.rc.ExistingTopics[t]
		}
		rr.Topics = append(rr.Topics, name)
	}
	runner.Reconcile(&c.res.Counts, records, outcomes, w.Topics, drained, rr)
}

// countStored asks the broker how many messages the run's topics hold, as
// a check of the acknowledged count.
// With workers lost, the acknowledged count lacks theirs: the broker's
// count is kept, not compared.
func (c *coordinator) countStored(workersLost bool) {
	sc, ok := c.rc.Driver.(driver.WrittenCounter)
	if !ok || len(c.rc.ExistingTopics) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(c.rc.Abandon, 30*time.Second)
	defer cancel()
	stored, err := c.stored(ctx, sc)
	if err != nil {
		c.res.Warnings = append(c.res.Warnings, "count stored messages: "+err.Error())
		return
	}
	cnt := &c.res.Counts
	cnt.StoredByBroker = &stored
	switch {
	case workersLost:
		c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("the broker stores %d messages; the %d acknowledged lack those of the workers lost", stored, cnt.Acked))
	case !cnt.StoredExplained():
		c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("accounting mismatch: the broker stores %d messages but %d were acknowledged", stored, cnt.Acked))
	case stored > cnt.Acked:
		c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("%d of the %d failed sends were stored all the same: the producer saw an error (such as a timeout) for a message the broker had written", stored-cnt.Acked, cnt.Failed))
	}
}

// distribution describes the workers and what each measured.
func (c *coordinator) distribution() *results.Distribution {
	d := &results.Distribution{Placement: string(c.cfg.Placement)}
	minLate, maxLate := int64(-1), int64(0)
	var maxErr, secondErr int64
	for _, m := range c.members {
		wk := results.Worker{
			Address: m.url, Hostname: m.info.Hostname, Producers: len(m.share.producers), Consumers: len(m.share.consumers),
			ClockOffsetMs: float64(m.off.Nanos) / 1e6, ClockErrorMs: float64(m.off.ErrorNanos) / 1e6, RoundTripMs: float64(m.off.RoundTripNanos) / 1e6,
			Intervals: len(m.intervals), Error: m.err,
		}
		if m.part != nil {
			wk.StartLateMs = float64(m.part.StartLateNanos) / 1e6
			wk.Measured, wk.System, wk.Warnings = m.part.Run.Measured.Traffic, m.part.Run.Measured.System, m.part.Run.Warnings
			if minLate < 0 || m.part.StartLateNanos < minLate {
				minLate = m.part.StartLateNanos
			}
			maxLate = max(maxLate, m.part.StartLateNanos)
		}
		switch e := m.off.ErrorNanos; {
		case e > maxErr:
			maxErr, secondErr = e, maxErr
		case e > secondErr:
			secondErr = e
		}
		d.Workers = append(d.Workers, wk)
	}
	if minLate >= 0 {
		d.StartSpreadMs = float64(maxLate-minLate) / 1e6
	}
	if c.cfg.Placement != ByTopic && len(c.members) > 1 {
		d.EndToEndClockErrorMs = float64(maxErr+secondErr) / 1e6
	}
	return d
}
