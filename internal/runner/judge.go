package runner

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// DefaultSendLag is how much later than this machine's own scheduling
// delay (p99, measured in the same run by the scheduling probe) a
// fixed-rate run's sends may leave, at p99, while the run still holds its
// target. A producer waiting for its next send time wakes no earlier than
// the scheduler lets any timer fire, so a fixed limit would judge the
// machine rather than brokerbench: on 2 cores shared with a local Kafka
// broker, the probe's p99 was 1.2 ms on a quiet machine, 15.8 ms with other
// work beside it and 51.6 ms with two CPU burners as well, and every send
// behind a late wake-up is late with it. 10 ms beyond
// that keeps the offered load within a tenth of a typical 100 ms latency
// objective of its schedule.
const DefaultSendLag = 10 * time.Millisecond

// outageBlame is the shortest outage in the measurement that names the
// broker as the limit of a missed target.
const outageBlame = time.Second

// TargetSpec is a fixed-rate run's target, for JudgeTarget.
type TargetSpec struct {
	// Rate is the target over all producers, msg/s.
	Rate float64
	// MaxSendLag is the send lag p99 limit: zero for DefaultSendLag
	// beyond the measured scheduling delay, negative for none.
	MaxSendLag time.Duration
	Interval   time.Duration
	// SentAll is true when the producers sent their whole message limit:
	// the run is then measured to its last acknowledgement, and its rate
	// includes that tail, so its schedule is judged by the send lag alone.
	SentAll bool
}

// sendLagLimitMs returns the send lag p99 limit for measurement m, in
// milliseconds; 0 for none.
func (s TargetSpec) sendLagLimitMs(m *results.Aggregate) float64 {
	switch {
	case s.MaxSendLag < 0:
		return 0
	case s.MaxSendLag > 0:
		return float64(s.MaxSendLag) / 1e6
	}
	limit := float64(DefaultSendLag) / 1e6
	if d := m.SchedulingDelay; d != nil {
		limit += d.P99
	}
	return limit
}

// JudgeTarget states whether the measured aggregate m held the target
// (the rate, and the send lag limit) and, when it did not, what limited
// it, in this order: the broker (sends failed; an outage of outageBlame or
// more; the producers waited on it most of the time, or long enough at
// once to make sends late, or the sends' lateness built up mostly while
// they waited on it), a machine disturbed by other processes, the
// load generator's CPU, a machine saturated by the broker (the broker's
// limit on this machine) or by brokerbench, and otherwise the load
// generator's own producers. Only brokerbench's own limits are
// LoadGeneratorBound.
func JudgeTarget(m *results.Aggregate, spec TargetSpec) *results.Target {
	tg := &results.Target{Rate: spec.Rate, AchievedRate: m.PublishRate, Held: true}
	if math.IsNaN(m.PublishRate) || m.DurationSeconds == 0 {
		tg.Held, tg.Reason = false, "no measurement interval completed"
		return tg
	}
	lagLimit := spec.sendLagLimitMs(m)
	tg.SendLagLimitMs = lagLimit
	// Every condition that failed is named: a run can both fall short of
	// the rate and send late, and the reader needs to know both.
	var reasons []string
	if m.ThroughputBound(spec.Rate, spec.SentAll) {
		reasons = append(reasons, fmt.Sprintf("achieved %.0f msg/s, below 99%% of the %.0f msg/s target", m.PublishRate, spec.Rate))
		tg.ThroughputBound = true
	}
	lagged := lagLimit > 0 && m.SendLag.P99 > lagLimit
	if lagged {
		why := fmt.Sprintf("send lag p99 %.3f ms exceeds %.3f ms", m.SendLag.P99, lagLimit)
		if d := m.SchedulingDelay; d != nil && spec.MaxSendLag == 0 {
			why += fmt.Sprintf(" (%.0f ms beyond this machine's scheduling delay p99 of %.3f ms)", float64(DefaultSendLag)/1e6, d.P99)
		}
		reasons = append(reasons, why+": messages left later than scheduled")
	}
	if len(reasons) == 0 {
		return tg
	}
	tg.Held, tg.Reason = false, strings.Join(reasons, "; ")
	tg.Limit, tg.LoadGeneratorBound, tg.Disturbed = limitOf(m, spec, lagLimit, lagged)
	return tg
}

// limitOf names what limited a missed target (see JudgeTarget).
func limitOf(m *results.Aggregate, spec TargetSpec, lagLimit float64, lagged bool) (limit string, loadGenerator, disturbed bool) {
	failedShare := 0.0
	if m.Sent > 0 {
		failedShare = float64(m.Failed) / float64(m.Sent)
	}
	s := m.System
	saturated := s != nil && s.CPUIdle < 5
	use := ""
	if s != nil {
		use = fmt.Sprintf("brokerbench used %.0f%% of a core", s.ClientCPU)
		if s.BrokerSampled {
			use += fmt.Sprintf(", the broker %.0f%%", s.BrokerCPU)
		}
	}
	var longest results.Outage
	for _, o := range m.Outages {
		if o.Seconds > longest.Seconds {
			longest = o
		}
	}
	_, isDisturbed := results.Disturbance(s)
	clientCores := 0.0
	if s != nil && s.Cores > 0 {
		clientCores = s.ClientCPU / 100 / float64(s.Cores)
	}
	switch {
	case failedShare >= 0.01:
		// Sends that fail at once (a broker down, connections refused)
		// leave the producers never waiting: the broker still set the
		// pace.
		return fmt.Sprintf("the broker: %.1f%% of sends failed (see the failures by kind)", 100*failedShare), false, false
	case longest.Seconds >= outageBlame.Seconds():
		return fmt.Sprintf("the broker: an outage, no acknowledgement for %.1f s from %.1f s while %d messages were in flight", longest.Seconds, longest.AtSeconds, longest.InFlight), false, false
	case m.BrokerWaitShare >= 0.5 && saturated:
		return fmt.Sprintf("the broker, which shared a saturated machine with the load generator: producers waited on it %.0f%% of the time, and the machine was %.1f%% idle (%s)", 100*m.BrokerWaitShare, s.CPUIdle, use), false, false
	case m.BrokerWaitShare >= 0.5:
		return fmt.Sprintf("the broker: producers waited on it %.0f%% of the time (in-flight window or client buffer full)", 100*m.BrokerWaitShare), false, false
	case lagged && m.BrokerWaitShare >= 0.01 && m.LongestBrokerWaitMs > lagLimit:
		// Waits long enough to move the p99 of the send lag, each
		// longer than the limit: the sends behind them left late.
		return fmt.Sprintf("the broker: producers waited on it %.1f%% of the time, up to %.0f ms at once (in-flight window or client buffer full), and the sends behind them left late", 100*m.BrokerWaitShare, m.LongestBrokerWaitMs), false, false
	case lagged && m.LateBehindBrokerShare >= 0.5:
		// Many short waits in a row: each below the limit, together
		// they made the sends late.
		return fmt.Sprintf("the broker: %.0f%% of the sends' lateness built up while producers waited on it (%.1f%% of the time, up to %.1f ms at once: in-flight window or client buffer full)", 100*m.LateBehindBrokerShare, 100*m.BrokerWaitShare, m.LongestBrokerWaitMs), false, false
	case isDisturbed:
		return "the machine, shared with other processes: " + results.DisturbanceText(s) + " (" + use + ")", false, true
	case clientCores >= 0.9:
		return fmt.Sprintf("the load generator's CPU: brokerbench used %.0f%% of a core, %.0f%% of the machine's %d cores", s.ClientCPU, 100*clientCores, s.Cores), true, false
	case saturated && s.BrokerSampled && s.BrokerCPU >= s.ClientCPU:
		return fmt.Sprintf("the broker's CPU on this machine: the machine was saturated (%.1f%% idle), and the broker took the most of it (%s)", s.CPUIdle, use), false, false
	case saturated:
		return fmt.Sprintf("the load generator's CPU: the machine was saturated (%.1f%% idle; %s)", s.CPUIdle, use), true, false
	}
	if late := max(100, float64(spec.Interval/time.Millisecond)/10); m.SampleDelayMaxMs > late {
		return fmt.Sprintf("the load generator's CPU: brokerbench's sampler ran up to %.0f ms late", m.SampleDelayMaxMs), true, false
	}
	if m.ThroughputBound(spec.Rate, spec.SentAll) {
		return fmt.Sprintf("the load generator: its producers waited on the broker only %.0f%% of the time and had CPU to spare, so they could not send faster themselves (each producer sends from one goroutine: add producers)", 100*m.BrokerWaitShare), true, false
	}
	sched := "not measured"
	if d := m.SchedulingDelay; d != nil {
		sched = fmt.Sprintf("p99 %.3f ms", d.P99)
	}
	return fmt.Sprintf("the load generator's schedule: its sends left late although neither it nor the machine was short of CPU and it waited on the broker only %.0f%% of the time (this machine's scheduling delay %s)", 100*m.BrokerWaitShare, sched), true, false
}

// watched ends the outage watcher and the scheduling probe and records
// what they saw in m: the outages that began in the measurement (which
// ended at clock time measureTo), the scheduling delay, and the
// producers' longest wait on the broker.
func (r *run) watched(m *results.Aggregate, measureTo int64) {
	if r.outages == nil {
		return
	}
	r.outageList = r.outages.end()
	m.SchedulingDelay = r.probe.end()
	for _, o := range r.outageList {
		if o.from < measureTo {
			m.Outages = append(m.Outages, results.Outage{
				AtSeconds: float64(o.from-r.origin) / 1e9, Seconds: float64(o.to-o.from) / 1e9, InFlight: o.inFlight,
			})
		}
	}
	now := clock.Now()
	for _, p := range r.producers {
		m.LongestBrokerWaitMs = max(m.LongestBrokerWaitMs, float64(p.longestWait(now))/1e6)
	}
}

// BacklogGrowth returns how fast the backlog grew over the measured
// intervals, per second, from the first one's end to the last one's; 0
// with fewer than two.
func BacklogGrowth(ivs []results.Interval) float64 {
	var first, last *results.Interval
	for i := range ivs {
		if ivs[i].Phase != results.Measure {
			continue
		}
		if first == nil {
			first = &ivs[i]
		}
		last = &ivs[i]
	}
	if first == nil || last == first || last.EndSeconds <= first.EndSeconds {
		return 0
	}
	return float64(last.Backlog-first.Backlog) / (last.EndSeconds - first.EndSeconds)
}

// consumersBehindShare is the share of the publish rate (per
// subscription) at which a growing backlog means the consumers fell
// behind, rather than the backlog's ordinary jitter.
const consumersBehindShare = 0.05

// ConsumersBehind says, when the consumers fell behind through the
// measurement m of a run of w, by how much, what the machine was doing
// and what w's consumer processing time allows; "" when they kept up.
// They fell behind when the backlog grew by at least
// consumersBehindShare of what was published for the subscriptions, and
// ended the measurement more than a second's publishing behind.
func ConsumersBehind(m *results.Aggregate, ivs []results.Interval, w *workload.Workload) string {
	published := m.PublishRate * float64(max(1, w.SubscriptionsPerTopic))
	if published <= 0 || m.BacklogGrowth < consumersBehindShare*published {
		return ""
	}
	var end int64
	for _, iv := range ivs {
		if iv.Phase == results.Measure {
			end = iv.Backlog
		}
	}
	if float64(end) <= published {
		return ""
	}
	text := fmt.Sprintf("the consumers fell behind: they received %.0f msg/s for the %.0f msg/s published to their subscriptions; the backlog grew by %.0f msg/s through the measurement to %d messages, so end-to-end latency (p50 %.3f ms) measures a growing queue, not delivery",
		m.ConsumeRate, published, m.BacklogGrowth, end, m.EndToEndLatency.P50)
	if s := m.System; s != nil {
		text += fmt.Sprintf(" (brokerbench used %.0f%% of a core", s.ClientCPU)
		if s.BrokerSampled {
			text += fmt.Sprintf(", the broker %.0f%%", s.BrokerCPU)
		}
		text += fmt.Sprintf(", the machine was %.0f%% idle)", s.CPUIdle)
	}
	if secs, left, ok := deliveryStalled(ivs); ok {
		return text + fmt.Sprintf("; then they received nothing for the last %.0f s of the drain, with %d messages still undelivered: delivery stalled (the broker sent nothing, or the consumers asked for nothing), it did not merely slow down", secs, left)
	}
	if pt := w.ConsumerProcessingTime; pt != nil {
		n := w.ConsumersPerSubscription
		text += fmt.Sprintf("; the workload's consumerProcessingTime (%s) caps the %d consumers of each subscription at %.0f msg/s", pt, n, pt.Ceiling(n))
	}
	return text + "; add consumers or partitions, or lower the rate"
}

// stallSeconds is how long consumers must receive nothing at the end of
// a drain that left messages undelivered for delivery to count as
// stalled.
const stallSeconds = 5

// deliveryStalled reports whether the consumers received nothing in the
// drain's last intervals, for at least stallSeconds, and the drain ended
// with messages undelivered; it returns how long that lasted and how
// many were left.
func deliveryStalled(ivs []results.Interval) (secs float64, left int64, stalled bool) {
	quietFrom := -1.0 // start of the drain's last intervals without a delivery
	var last results.Interval
	for _, iv := range ivs {
		if iv.Phase != results.Drain {
			continue
		}
		last = iv
		switch {
		case iv.Consumed > 0:
			quietFrom = -1
		case quietFrom < 0:
			quietFrom = iv.StartSeconds
		}
	}
	if quietFrom < 0 || last.Backlog <= 0 {
		return 0, 0, false
	}
	secs = last.EndSeconds - quietFrom
	return secs, last.Backlog, secs >= stallSeconds
}
