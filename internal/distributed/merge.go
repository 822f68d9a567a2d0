package distributed

import (
	"errors"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// latencies are one stretch's four distributions, decoded.
type latencies struct {
	pub, svc, lag, e2e *hdrhistogram.Histogram
}

func newLatencies() latencies {
	return latencies{pub: metrics.NewHDR(), svc: metrics.NewHDR(), lag: metrics.NewHDR(), e2e: metrics.NewHDR()}
}

// add merges the encoded histograms h into l: exactly, bucket by bucket.
// An empty encoding is an empty histogram.
func (l latencies) add(h results.Histograms) error {
	var errs []error
	for _, p := range []struct {
		dst *hdrhistogram.Histogram
		enc string
	}{{l.pub, h.PublishLatency}, {l.svc, h.ServiceTime}, {l.lag, h.SendLag}, {l.e2e, h.EndToEndLatency}} {
		if p.enc == "" {
			continue
		}
		src, err := metrics.Decode(p.enc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if dropped := p.dst.Merge(src); dropped > 0 {
			errs = append(errs, fmt.Errorf("%d values outside the histogram's range were dropped", dropped))
		}
	}
	return errors.Join(errs...)
}

func (l latencies) encode() (results.Histograms, error) {
	var out results.Histograms
	var errs []error
	for _, p := range []struct {
		dst *string
		h   *hdrhistogram.Histogram
	}{{&out.PublishLatency, l.pub}, {&out.ServiceTime, l.svc}, {&out.SendLag, l.lag}, {&out.EndToEndLatency, l.e2e}} {
		enc, err := metrics.Encode(p.h)
		*p.dst = enc
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// traffic is the merged traffic of parts whose histograms are l: counts
// and latencies from the histograms, which hold exactly one entry per
// send, acknowledgement and delivery, as in one process; failures summed;
// rates the sum of the parts' rates (each over its own stretch, which
// starts and ends at the same instants up to the start spread).
func (l latencies) traffic(parts []results.Traffic, messageSize int) results.Traffic {
	t := results.Traffic{
		Sent: l.lag.TotalCount(), Acked: l.pub.TotalCount(), Consumed: l.e2e.TotalCount(),
		PublishLatency: metrics.Summarize(l.pub), ServiceTime: metrics.Summarize(l.svc),
		SendLag: metrics.Summarize(l.lag), EndToEndLatency: metrics.Summarize(l.e2e),
	}
	for _, p := range parts {
		t.Failed += p.Failed
		t.PublishRate += p.PublishRate
		t.ConsumeRate += p.ConsumeRate
	}
	t.PublishMBps, t.ConsumeMBps = t.PublishRate*float64(messageSize)/1e6, t.ConsumeRate*float64(messageSize)/1e6
	return t
}

// partInterval is one worker's interval with its histograms.
type partInterval struct {
	iv results.Interval
	h  results.Histograms
}

// mergeInterval merges the same interval of several workers into the
// interval one process would have measured, and returns its histograms.
// Its backlog is left for the caller, who knows the run's totals: a sum
// of the workers' backlogs would count a message sent on one worker and
// consumed on another as waiting.
// system, if not nil, is the coordinator's sample for it; the load
// generator's CPU and memory are then the workers' sums.
func mergeInterval(parts []partInterval, messageSize int, system *results.System) (results.Interval, results.Histograms, error) {
	l := newLatencies()
	var errs []error
	traffic := make([]results.Traffic, len(parts))
	out := results.Interval{StartSeconds: parts[0].iv.StartSeconds, EndSeconds: parts[0].iv.EndSeconds, Phase: parts[0].iv.Phase}
	var clientCPU, clientRSS float64
	for i, p := range parts {
		errs = append(errs, l.add(p.h))
		traffic[i] = p.iv.Traffic
		out.StartSeconds, out.EndSeconds = min(out.StartSeconds, p.iv.StartSeconds), max(out.EndSeconds, p.iv.EndSeconds)
		if s := p.iv.System; s != nil {
			clientCPU += s.ClientCPU
			clientRSS += s.ClientRSSMB
		}
	}
	out.Traffic = l.traffic(traffic, messageSize)
	if system == nil && parts[0].iv.System != nil {
		c := *parts[0].iv.System
		system = &c
	}
	if system != nil {
		system.ClientCPU, system.ClientRSSMB = clientCPU, clientRSS
		out.System = system
	}
	h, err := l.encode()
	return out, h, errors.Join(append(errs, err)...)
}

// mergeMeasured merges the workers' measurement phases: exactly for counts
// and latencies. producers weighs each worker's broker wait share.
func mergeMeasured(parts []*results.Run, producers []int, messageSize int) (results.Aggregate, results.Histograms, error) {
	l := newLatencies()
	var errs []error
	var agg results.Aggregate
	traffic := make([]results.Traffic, 0, len(parts))
	waited, weight := 0.0, 0
	for i, p := range parts {
		errs = append(errs, l.add(p.Histograms))
		traffic = append(traffic, p.Measured.Traffic)
		agg.DurationSeconds = max(agg.DurationSeconds, p.Measured.DurationSeconds)
		agg.SampleDelayMaxMs = max(agg.SampleDelayMaxMs, p.Measured.SampleDelayMaxMs)
		waited += p.Measured.BrokerWaitShare * float64(producers[i])
		weight += producers[i]
	}
	agg.Traffic = l.traffic(traffic, messageSize)
	if weight > 0 {
		agg.BrokerWaitShare = waited / float64(weight)
	}
	h, err := l.encode()
	return agg, h, errors.Join(append(errs, err)...)
}

// addCounts adds one worker's counters to the run's; the delivery
// accounting is reconciled separately, over all workers' records.
func addCounts(dst *results.Counts, c results.Counts) {
	dst.Sent += c.Sent
	dst.Acked += c.Acked
	dst.Failed += c.Failed
	dst.Consumed += c.Consumed
	dst.Foreign += c.Foreign
	dst.Unacked += c.Unacked
	dst.OutOfOrder += c.OutOfOrder
	dst.LatencyClamped += c.LatencyClamped
	for k, v := range c.FailedByKind {
		if dst.FailedByKind == nil {
			dst.FailedByKind = map[string]int64{}
		}
		dst.FailedByKind[k] += v
	}
}
