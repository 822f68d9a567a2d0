package results

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/brokerbench/brokerbench/internal/metrics"
)

// ProgressLine formats one interval for the live progress display. In the
// drain the producers have stopped, so its publish column counts the
// acknowledgements of earlier sends, and says so ("ack").
func ProgressLine(iv Interval) string {
	pub := "pub"
	if iv.Phase == Drain {
		pub = "ack"
	}
	return fmt.Sprintf("%6.1fs %-7s %s %9.0f msg/s %7.2f MB/s | cons %9.0f msg/s | backlog %8d | err %d | pub p50 %7.2f p99 %8.2f ms | e2e p50 %7.2f p99 %8.2f ms",
		iv.EndSeconds, iv.Phase, pub, iv.PublishRate, iv.PublishMBps, iv.ConsumeRate, iv.Backlog, iv.Failed,
		iv.PublishLatency.P50, iv.PublishLatency.P99, iv.EndToEndLatency.P50, iv.EndToEndLatency.P99)
}

// PrintSummary writes the final human-readable summary of r.
func PrintSummary(out io.Writer, r *Run) {
	w := r.Workload
	m := r.Measured
	status := "complete"
	switch v := Judge(r); v.Kind {
	case Interrupted:
		status = "PARTIAL (" + r.PartialReason + ")"
	case Failed:
		status = "FAILED"
	}
	fmt.Fprintf(out, "\n== %s on %s (%s) — %s\n", w.Name, r.Driver.Name, r.Environment.BrokerVersion, status)
	for _, n := range w.Notes {
		fmt.Fprintf(out, "   note: %s\n", n)
	}
	size := fmt.Sprintf("%d B messages", w.MessageSize)
	if p := r.Payloads; p != nil && p.MinBytes != p.MaxBytes {
		size = fmt.Sprintf("messages of %d-%d B (mean %.0f B)", p.MinBytes, p.MaxBytes, p.MeanBytes)
	}
	if p := r.Payloads; p != nil && p.Codec != "" {
		size += fmt.Sprintf(" compressing to %.2f with %s", p.CompressionRatio, p.Codec)
	}
	consumers := fmt.Sprintf("%d consumer(s)", w.Consumers())
	if pt := w.ConsumerProcessingTime; pt != nil {
		consumers += fmt.Sprintf(" processing each message for %s", pt)
	}
	fmt.Fprintf(out, "   %d topic(s) x %d partition(s), %s, %d producer(s), %s, ",
		w.Topics, w.PartitionsPerTopic, size, w.Producers(), consumers)
	switch {
	case w.ProducerRate > 0:
		fmt.Fprintf(out, "target %.0f msg/s\n", w.ProducerRate)
	case w.RateProfile != nil && r.Target != nil:
		fmt.Fprintf(out, "rate profile, mean target %.0f msg/s\n", r.Target.Rate)
	case w.RateProfile != nil:
		fmt.Fprintf(out, "rate profile\n")
	default:
		fmt.Fprintf(out, "max rate\n")
	}
	fmt.Fprintf(out, "   measured %.3g s: publish %.0f msg/s (%.2f MB/s), consume %.0f msg/s (%.2f MB/s)\n",
		m.DurationSeconds, m.PublishRate, m.PublishMBps, m.ConsumeRate, m.ConsumeMBps)
	if p := r.Price; p != nil && m.PublishRate > 0 {
		fmt.Fprintf(out, "   cost: %.2f %s per hour (%d nodes x %.3f) = %.2f %s per billion messages published\n",
			p.PerHour(), p.Currency, p.Nodes, p.PerNodeHour, p.PerBillion(m.PublishRate), p.Currency)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency (ms)\tcount\tmean\tp50\tp75\tp95\tp99\tp99.9\tp99.99\tmax\t")
	row := func(name string, l metrics.Latency) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, l.Count, l.Mean, l.P50, l.P75, l.P95, l.P99, l.P999, l.P9999, l.Max)
	}
	row("publish", m.PublishLatency)
	row("service time", m.ServiceTime)
	row("end-to-end", m.EndToEndLatency)
	row("send lag", m.SendLag)
	if m.CommitLatency != nil {
		row("commit", *m.CommitLatency)
	}
	tw.Flush()
	fmt.Fprintln(out, "   (publish and end-to-end run from the intended send time; service time from the actual send to the acknowledgement)")
	c := r.Counts
	if tx := c.Transactions; tx != nil && w.Transactions != nil {
		fmt.Fprintf(out, "   transactions of up to %d messages: %d committed, %d aborted (abort rate %.3f, %d messages), %d undecided; aborted messages read %d; consumers read committed only\n",
			w.Transactions.Size, tx.Committed, tx.Aborted, tx.AbortRate(), tx.AbortedMessages, tx.Undecided, c.AbortedRead)
	}
	fmt.Fprintf(out, "   accounting: sent %d, acked %d, failed %d, unacked %d, consumed %d, lost %d, duplicated %d, out of order %d",
		c.Sent, c.Acked, c.Failed, c.Unacked, c.Consumed, c.Lost, c.Duplicated, c.OutOfOrder)
	if c.UnconfirmedLoss > 0 {
		fmt.Fprintf(out, ", UNCONFIRMED LOSS %d", c.UnconfirmedLoss)
	}
	if c.DeliveredLate > 0 {
		fmt.Fprintf(out, ", delivered late %d", c.DeliveredLate)
	}
	if c.StoredByBroker != nil {
		fmt.Fprintf(out, ", stored by broker %d", *c.StoredByBroker)
	}
	fmt.Fprintln(out)
	for _, sc := range c.Subscriptions {
		rr := sc.Reread
		switch {
		case rr == nil:
		case rr.Complete:
			fmt.Fprintf(out, "   re-read of %s after the drain: %d acknowledged messages missing; read %d messages from the broker, %d of them missing ones (delivered late); %d lost, proven\n",
				sc.Name, rr.Missing, rr.Read, rr.Found, sc.Lost)
		default:
			fmt.Fprintf(out, "   re-read of %s after the drain: %d acknowledged messages missing; %d found in the broker (delivered late); %d an unconfirmed loss, not proven: %s\n",
				sc.Name, rr.Missing, rr.Found, sc.UnconfirmedLoss, rr.Error)
		}
	}
	if c.Undelivered > 0 {
		fmt.Fprintf(out, "   undelivered: %d acknowledged messages not consumed when the run ended before the consumers caught up (not counted as lost)\n", c.Undelivered)
	}
	if c.FailedDelivered > 0 || c.Unexpected > 0 || c.Foreign > 0 {
		fmt.Fprintf(out, "   also: %d failed but delivered, %d unexpected, %d without a brokerbench header\n", c.FailedDelivered, c.Unexpected, c.Foreign)
	}
	if len(c.FailedByKind) > 0 {
		fmt.Fprintf(out, "   failures%s\n", FailureKinds(c))
	}
	for _, ev := range r.Faults {
		fmt.Fprintf(out, "   %s\n", ev.Describe())
	}
	if n := r.LeaderMoves; n != nil {
		fmt.Fprintf(out, "   partition leaders moved: %d of %d partitions led by another node after the run than at its start\n", *n, w.Topics*w.PartitionsPerTopic)
	}
	if t := r.Target; t != nil {
		if t.Held {
			fmt.Fprintf(out, "   target rate held: %.0f of %.0f msg/s\n", t.AchievedRate, t.Rate)
		} else if len(r.Faults) > 0 {
			fmt.Fprintf(out, "   target rate not held (with faults, a finding, not a failure): %s\n", t.Reason)
		} else {
			fmt.Fprintf(out, "   TARGET RATE NOT HELD: %s\n", t.Reason)
		}
		if t.ThroughputBound {
			fmt.Fprintf(out, "   THROUGHPUT-BOUND at %.0f msg/s (%.2f MB/s), limited by %s; publish latency from the intended send time measures the growing schedule backlog, the service time (p50 %.3f, p99 %.3f ms) is the latency at that rate\n",
				t.AchievedRate, t.AchievedRate*float64(w.MessageSize)/1e6, t.Limit, m.ServiceTime.P50, m.ServiceTime.P99)
		}
	}
	if f := FollowedProfile(r); f != nil {
		fmt.Fprintf(out, "   %s\n", f.Describe())
	}
	switch v := Judge(r); v.Kind {
	case Failed:
		fmt.Fprintf(out, "   RUN FAILED: %s\n", v.Reason)
	case LoadGeneratorBound:
		fmt.Fprintf(out, "   LOAD-GENERATOR-BOUND: %s\n", v.Reason)
	case Disturbed:
		fmt.Fprintf(out, "   DISTURBED: %s\n", v.Reason)
	case ConsumerBound:
		fmt.Fprintf(out, "   CONSUMER-BOUND: %s\n", v.Reason)
	}
	for _, o := range r.Measured.Outages {
		if o.Seconds >= 1 {
			fmt.Fprintf(out, "   outage: no acknowledgement for %.1f s from %.1f s, %d messages in flight\n", o.Seconds, o.AtSeconds, o.InFlight)
		}
	}
	if mr := r.MaxRate; mr != nil {
		fmt.Fprintf(out, "   max-rate search (%s), ceiling %.0f msg/s:\n", strings.Join(mr.SLO, ", "), mr.Ceiling)
		for _, s := range mr.Steps {
			fmt.Fprintln(out, RateStepLine(s))
		}
		if mr.Rate > 0 {
			fmt.Fprintf(out, "   MAX SUSTAINABLE RATE: %.0f msg/s (%.2f MB/s); the figures above are that step's\n", mr.Rate, mr.Rate*float64(w.MessageSize)/1e6)
			if rp := mr.Repeatability; rp != nil {
				fmt.Fprintf(out, "   %s\n", rp.Describe())
			}
			if mr.Rate > mr.Ceiling {
				fmt.Fprintf(out, "   (above the unthrottled probe's %.0f msg/s: the probe met a slow moment, and did not cap the search)\n", mr.Ceiling)
			}
		}
		switch {
		case mr.NotMeasurable != "" && mr.Rate > 0:
			// A repeat, or a step above the rate found, met the disturbance.
			fmt.Fprintf(out, "   NOT MEASURABLE beyond it: %s\n", mr.NotMeasurable)
		case mr.NotMeasurable != "":
			fmt.Fprintf(out, "   NOT MEASURABLE: %s\n", mr.NotMeasurable)
		case mr.Rate == 0:
			fmt.Fprintf(out, "   NO RATE SUSTAINED\n")
		}
	}
	if d := r.Distributed; d != nil {
		printDistribution(out, d)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(out, "   warning: %s\n", warn)
	}
}

// printDistribution prints how a distributed run was spread and what each
// worker measured.
func printDistribution(out io.Writer, d *Distribution) {
	fmt.Fprintf(out, "   %d workers (placement %s): started within %.3f ms of each other", len(d.Workers), d.Placement, d.StartSpreadMs)
	if d.EndToEndClockErrorMs > 0 {
		fmt.Fprintf(out, "; end-to-end latencies across workers carry up to ±%.3f ms of clock error", d.EndToEndClockErrorMs)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\tproducers\tconsumers\tclock offset ms\t± ms\tstart late ms\tpublish msg/s\tconsume msg/s\tpublish p99 ms\tCPU %\t")
	for _, w := range d.Workers {
		cpu := "-"
		if w.System != nil {
			cpu = fmt.Sprintf("%.0f", w.System.ClientCPU)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%+.3f\t%.3f\t%.3f\t%.0f\t%.0f\t%.3f\t%s\t\n", w.Address, w.Producers, w.Consumers,
			w.ClockOffsetMs, w.ClockErrorMs, w.StartLateMs, w.Measured.PublishRate, w.Measured.ConsumeRate, w.Measured.PublishLatency.P99, cpu)
	}
	tw.Flush()
	for _, w := range d.Workers {
		if w.Error != "" {
			fmt.Fprintf(out, "   WORKER %s %s\n", w.Address, w.Error)
		}
	}
}

// RateStepLine formats one step of a max-rate search.
func RateStepLine(s RateStep) string {
	target := fmt.Sprintf("%9.0f", s.TargetRate)
	verdict := "held"
	switch {
	case s.Kind == StepWarmup:
		target, verdict = "(warm-up)", "not judged"
	case s.Kind == StepRamp:
		verdict = "ramp, knee at this target: " + s.Reason
	case s.TargetRate == 0:
		target, verdict = "  (probe)", "ceiling"
	case !s.Held && s.Disturbed:
		verdict = "NOT HELD, MACHINE DISTURBED: " + s.Reason
	case !s.Held:
		verdict = "NOT HELD: " + s.Reason
	}
	if s.Kind == StepRepeat {
		verdict = "repeat: " + verdict
	}
	return fmt.Sprintf("  target %s msg/s | achieved %9.0f | pub p50 %7.2f p99 %8.2f p99.9 %8.2f ms | e2e p99 %8.2f ms | backlog %d | %s",
		target, s.AchievedRate, s.PublishLatency.P50, s.PublishLatency.P99, s.PublishLatency.P999, s.EndToEndLatency.P99, s.Backlog, verdict)
}

// Describe states, in words, how repeatable a search's answer was.
func (rp *Repeatability) Describe() string {
	d := fmt.Sprintf("repeatability: %.0f msg/s held in %d of %d runs", rp.Rate, rp.Held, rp.Runs)
	if rp.Above > 0 {
		d += fmt.Sprintf(", %.0f msg/s above it failed in %d of %d", rp.Above, rp.AboveRuns-rp.AboveHeld, rp.AboveRuns)
	} else {
		d += "; no rate above it failed within the steps allowed (raise --max-steps)"
	}
	switch {
	case rp.Held < rp.Runs:
		d += ": NOT REPEATABLE, the found rate failed when run again; treat it as an upper bound"
	case rp.AboveHeld > 0:
		d += ": the rate above also held at times; the limit lies near or above the found rate"
	}
	return d
}

// Describe states what a fault did and what it cost, in one line.
func (ev FaultEvent) Describe() string {
	d := fmt.Sprintf("fault at %.1f s: %s", ev.AtSeconds, ev.Action)
	if ev.Target != "" {
		d += ": " + ev.Target
	}
	if ev.Error != "" {
		return d + ": FAILED: " + ev.Error
	}
	if r := ev.Recovery; r != nil {
		d += fmt.Sprintf("; publish rate %.0f msg/s before, lowest %.0f after", r.RateBefore, r.LowestRate)
		if r.RecoverySeconds != nil {
			d += fmt.Sprintf(", back above 90%% %.1f s after the fault", *r.RecoverySeconds)
		} else {
			d += ", NOT back above 90% before the measurement ended"
		}
		d += fmt.Sprintf("; max publish latency %.1f ms", r.MaxPublishLatencyMs)
		if r.UnavailableSeconds > 0 {
			d += fmt.Sprintf("; no acknowledgement at all for %.2f s", r.UnavailableSeconds)
		}
	}
	return d
}
