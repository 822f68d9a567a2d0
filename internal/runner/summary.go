package runner

import (
	"fmt"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// summarise fills in the measured aggregate, the accounting and the
// target's verdict once the run is over.
func (r *run) summarise(c *collector, measureEnd totals) {
	secs := 0.0
	if c.measuring && c.measureTo > c.measureFrom {
		secs = float64(c.measureTo-c.measureFrom) / 1e9
	}
	agg := c.agg.summaries()
	r.res.Measured = results.Aggregate{
		DurationSeconds: secs,
		Traffic:         traffic(agg, measureEnd.failed-c.measureStart.failed, secs, r.w.MessageSize),
	}
	m := &r.res.Measured
	m.System = results.MeanSystem(r.res.Intervals)
	m.SampleDelayMaxMs = float64(c.lateMax) / 1e6
	if secs > 0 && len(r.producers) > 0 {
		m.BrokerWaitShare = min(1, float64(measureEnd.waitedForBroker-c.measureStart.waitedForBroker)/(secs*1e9*float64(len(r.producers))))
	}
	if grew := measureEnd.lateGrowth - c.measureStart.lateGrowth; grew > 0 {
		m.LateBehindBrokerShare = float64(measureEnd.lateFromWaits-c.measureStart.lateFromWaits) / float64(grew)
	}
	if r.cfg.NoLatencyRecording && secs > 0 {
		m.Sent, m.Acked = measureEnd.sent-c.measureStart.sent, measureEnd.acked-c.measureStart.acked
		m.Consumed = measureEnd.consumed - c.measureStart.consumed
		m.PublishRate, m.ConsumeRate = float64(m.Acked)/secs, float64(m.Consumed)/secs
		m.PublishMBps, m.ConsumeMBps = m.PublishRate*float64(r.w.MessageSize)/1e6, m.ConsumeRate*float64(r.w.MessageSize)/1e6
	}
	if r.w.Transactional() {
		commit := metrics.Summarize(agg.commit)
		m.CommitLatency = &commit
	}
	var err error
	if r.res.Histograms, err = c.agg.encode(); err != nil {
		r.res.Warnings = append(r.res.Warnings, err.Error())
	}
	r.watched(m, c.measureTo)
	r.count()
	r.recoverFaults()
	m.BacklogGrowth = BacklogGrowth(r.res.Intervals)
	if r.res.Backlog == nil && len(r.subs) > 0 && len(r.producers) > 0 {
		m.ConsumersBehind = ConsumersBehind(m, r.res.Intervals, r.w)
	}
	if rate := r.targetRate(c); rate > 0 && len(r.producers) > 0 {
		r.res.Target = JudgeTarget(m, TargetSpec{Rate: rate, MaxSendLag: r.cfg.MaxSendLag, Interval: r.cfg.Interval, SentAll: r.sentAll})
	}
}

// targetRate is the rate the producers were to hold in the measurement:
// the workload's constant rate, or a rate profile's mean over the
// measured stretch; 0 when they send as fast as they can.
func (r *run) targetRate(c *collector) float64 {
	if r.w.ProducerRate > 0 || r.pacing == nil {
		return r.w.ProducerRate
	}
	return meanTarget(r.pacing, c.origin, c.measureFrom, c.measureTo)
}

// count fills in the run's message accounting: the counters, failures by
// kind, the reconciliation of sends with deliveries, and the broker's own
// count where the driver can give it.
func (r *run) count() {
	t := r.totals()
	cnt := &r.res.Counts
	cnt.Sent, cnt.Acked, cnt.Failed, cnt.Consumed, cnt.Foreign = t.sent, t.acked, t.failed, t.consumed, t.foreign
	cnt.Unacked = t.sent - t.acked - t.failed
	for _, p := range r.producers {
		p.stats.failMu.Lock()
		for k, v := range p.stats.failedByKind {
			if cnt.FailedByKind == nil {
				cnt.FailedByKind = map[string]int64{}
			}
			cnt.FailedByKind[k] += v
		}
		p.stats.failMu.Unlock()
		cnt.LatencyClamped += p.stats.acks.Clamped(publishLane) + p.stats.sendLag.Clamped(0)
	}
	for _, s := range r.consumers {
		cnt.LatencyClamped += s.endToEnd.Clamped(0)
		cnt.OutOfOrder += s.outOfOrder.Load()
	}
	var txWarnings []string
	cnt.Transactions, txWarnings = r.transactionCounts()
	r.res.Warnings = append(r.res.Warnings, txWarnings...)
	if r.part != nil {
		r.keepRecords()
		return
	}
	r.reconcile(cnt)
	if sc, ok := r.writtenCounter(); ok {
		if r.stored == nil {
			r.stored = r.settleStored(r.cfg.Abandon, sc, func() int64 { return t.acked })
		}
		stored, err := r.stored.wait()
		if err != nil {
			r.res.Warnings = append(r.res.Warnings, "count stored messages: "+err.Error())
		} else {
			cnt.StoredByBroker = &stored
			switch {
			case !cnt.StoredExplained():
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("accounting mismatch: the broker stores %d messages but %d were acknowledged", stored, t.acked))
			case stored > t.acked:
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%d of the %d failed sends were stored all the same: the producer saw an error (such as a timeout) for a message the broker had written", stored-t.acked, t.failed))
			}
		}
	}
}

func traffic(h summaries, failed int64, secs float64, messageSize int) results.Traffic {
	t := results.Traffic{
		Sent: h.lag.TotalCount(), Acked: h.pub.TotalCount(), Failed: failed, Consumed: h.e2e.TotalCount(),
		PublishLatency: metrics.Summarize(h.pub), ServiceTime: metrics.Summarize(h.svc),
		SendLag: metrics.Summarize(h.lag), EndToEndLatency: metrics.Summarize(h.e2e),
	}
	if secs > 0 {
		t.PublishRate, t.ConsumeRate = float64(t.Acked)/secs, float64(t.Consumed)/secs
		t.PublishMBps, t.ConsumeMBps = t.PublishRate*float64(messageSize)/1e6, t.ConsumeRate*float64(messageSize)/1e6
	}
	return t
}
