package results

import (
	"github.com/brokerbench/brokerbench/internal/metrics"
)

// OMBResult mirrors OpenMessaging Benchmark's TestResult JSON, so that OMB's
// chart scripts read brokerbench runs, and every field means what it means
// in OMB: publishLatency is the acknowledgement minus the *actual* send time
// (brokerbench's service time), publishDelayLatency is the actual minus the
// intended send time (send lag), endToEndLatency runs from the intended send
// time as in OMB. Per-interval lists cover the measured intervals only (OMB
// leaves the warmup out; a backlog test's build and drain are kept);
// aggregated values cover the measurement phase. Latencies are
// milliseconds, except publish delay, which OMB reports in microseconds.
type OMBResult struct {
	Workload          string `json:"workload"`
	Driver            string `json:"driver"`
	MessageSize       int    `json:"messageSize"`
	Topics            int    `json:"topics"`
	Partitions        int    `json:"partitions"`
	ProducersPerTopic int    `json:"producersPerTopic"`
	ConsumersPerTopic int    `json:"consumersPerTopic"`

	PublishRate      []float64 `json:"publishRate"`
	PublishErrorRate []float64 `json:"publishErrorRate"`
	ConsumeRate      []float64 `json:"consumeRate"`
	Backlog          []int64   `json:"backlog"`

	PublishLatencyAvg     []float64 `json:"publishLatencyAvg"`
	PublishLatency50pct   []float64 `json:"publishLatency50pct"`
	PublishLatency75pct   []float64 `json:"publishLatency75pct"`
	PublishLatency95pct   []float64 `json:"publishLatency95pct"`
	PublishLatency99pct   []float64 `json:"publishLatency99pct"`
	PublishLatency999pct  []float64 `json:"publishLatency999pct"`
	PublishLatency9999pct []float64 `json:"publishLatency9999pct"`
	PublishLatencyMax     []float64 `json:"publishLatencyMax"`

	PublishDelayLatencyAvg     []float64 `json:"publishDelayLatencyAvg"`
	PublishDelayLatency50pct   []float64 `json:"publishDelayLatency50pct"`
	PublishDelayLatency75pct   []float64 `json:"publishDelayLatency75pct"`
	PublishDelayLatency95pct   []float64 `json:"publishDelayLatency95pct"`
	PublishDelayLatency99pct   []float64 `json:"publishDelayLatency99pct"`
	PublishDelayLatency999pct  []float64 `json:"publishDelayLatency999pct"`
	PublishDelayLatency9999pct []float64 `json:"publishDelayLatency9999pct"`
	PublishDelayLatencyMax     []float64 `json:"publishDelayLatencyMax"`

	AggregatedPublishLatencyAvg     float64 `json:"aggregatedPublishLatencyAvg"`
	AggregatedPublishLatency50pct   float64 `json:"aggregatedPublishLatency50pct"`
	AggregatedPublishLatency75pct   float64 `json:"aggregatedPublishLatency75pct"`
	AggregatedPublishLatency95pct   float64 `json:"aggregatedPublishLatency95pct"`
	AggregatedPublishLatency99pct   float64 `json:"aggregatedPublishLatency99pct"`
	AggregatedPublishLatency999pct  float64 `json:"aggregatedPublishLatency999pct"`
	AggregatedPublishLatency9999pct float64 `json:"aggregatedPublishLatency9999pct"`
	AggregatedPublishLatencyMax     float64 `json:"aggregatedPublishLatencyMax"`

	AggregatedPublishDelayLatencyAvg     float64 `json:"aggregatedPublishDelayLatencyAvg"`
	AggregatedPublishDelayLatency50pct   float64 `json:"aggregatedPublishDelayLatency50pct"`
	AggregatedPublishDelayLatency75pct   float64 `json:"aggregatedPublishDelayLatency75pct"`
	AggregatedPublishDelayLatency95pct   float64 `json:"aggregatedPublishDelayLatency95pct"`
	AggregatedPublishDelayLatency99pct   float64 `json:"aggregatedPublishDelayLatency99pct"`
	AggregatedPublishDelayLatency999pct  float64 `json:"aggregatedPublishDelayLatency999pct"`
	AggregatedPublishDelayLatency9999pct float64 `json:"aggregatedPublishDelayLatency9999pct"`
	AggregatedPublishDelayLatencyMax     float64 `json:"aggregatedPublishDelayLatencyMax"`

	EndToEndLatencyAvg     []float64 `json:"endToEndLatencyAvg"`
	EndToEndLatency50pct   []float64 `json:"endToEndLatency50pct"`
	EndToEndLatency75pct   []float64 `json:"endToEndLatency75pct"`
	EndToEndLatency95pct   []float64 `json:"endToEndLatency95pct"`
	EndToEndLatency99pct   []float64 `json:"endToEndLatency99pct"`
	EndToEndLatency999pct  []float64 `json:"endToEndLatency999pct"`
	EndToEndLatency9999pct []float64 `json:"endToEndLatency9999pct"`
	EndToEndLatencyMax     []float64 `json:"endToEndLatencyMax"`

	AggregatedEndToEndLatencyAvg     float64 `json:"aggregatedEndToEndLatencyAvg"`
	AggregatedEndToEndLatency50pct   float64 `json:"aggregatedEndToEndLatency50pct"`
	AggregatedEndToEndLatency75pct   float64 `json:"aggregatedEndToEndLatency75pct"`
	AggregatedEndToEndLatency95pct   float64 `json:"aggregatedEndToEndLatency95pct"`
	AggregatedEndToEndLatency99pct   float64 `json:"aggregatedEndToEndLatency99pct"`
	AggregatedEndToEndLatency999pct  float64 `json:"aggregatedEndToEndLatency999pct"`
	AggregatedEndToEndLatency9999pct float64 `json:"aggregatedEndToEndLatency9999pct"`
	AggregatedEndToEndLatencyMax     float64 `json:"aggregatedEndToEndLatencyMax"`
}

// OMB converts a run to OMB's TestResult shape.
func OMB(r *Run) *OMBResult {
	w := r.Workload
	o := &OMBResult{
		Workload: w.Name, Driver: r.Driver.Name, MessageSize: w.MessageSize, Topics: w.Topics,
		Partitions: w.PartitionsPerTopic, ProducersPerTopic: w.ProducersPerTopic,
		ConsumersPerTopic: w.SubscriptionsPerTopic * w.ConsumersPerSubscription,
	}
	for _, iv := range r.Intervals {
		if iv.Phase == Drain || iv.Phase == Warmup {
			continue
		}
		secs := iv.EndSeconds - iv.StartSeconds
		errRate := 0.0
		if secs > 0 {
			errRate = float64(iv.Failed) / secs
		}
		o.PublishRate = append(o.PublishRate, iv.PublishRate)
		o.PublishErrorRate = append(o.PublishErrorRate, errRate)
		o.ConsumeRate = append(o.ConsumeRate, iv.ConsumeRate)
		o.Backlog = append(o.Backlog, iv.Backlog)
		appendLatency(iv.ServiceTime, 1, &o.PublishLatencyAvg, &o.PublishLatency50pct, &o.PublishLatency75pct, &o.PublishLatency95pct,
			&o.PublishLatency99pct, &o.PublishLatency999pct, &o.PublishLatency9999pct, &o.PublishLatencyMax)
		appendLatency(iv.SendLag, 1000, &o.PublishDelayLatencyAvg, &o.PublishDelayLatency50pct, &o.PublishDelayLatency75pct, &o.PublishDelayLatency95pct,
			&o.PublishDelayLatency99pct, &o.PublishDelayLatency999pct, &o.PublishDelayLatency9999pct, &o.PublishDelayLatencyMax)
		appendLatency(iv.EndToEndLatency, 1, &o.EndToEndLatencyAvg, &o.EndToEndLatency50pct, &o.EndToEndLatency75pct, &o.EndToEndLatency95pct,
			&o.EndToEndLatency99pct, &o.EndToEndLatency999pct, &o.EndToEndLatency9999pct, &o.EndToEndLatencyMax)
	}
	m := r.Measured
	p := m.ServiceTime
	o.AggregatedPublishLatencyAvg, o.AggregatedPublishLatency50pct, o.AggregatedPublishLatency75pct, o.AggregatedPublishLatency95pct = p.Mean, p.P50, p.P75, p.P95
	o.AggregatedPublishLatency99pct, o.AggregatedPublishLatency999pct, o.AggregatedPublishLatency9999pct, o.AggregatedPublishLatencyMax = p.P99, p.P999, p.P9999, p.Max
	d := m.SendLag
	o.AggregatedPublishDelayLatencyAvg, o.AggregatedPublishDelayLatency50pct, o.AggregatedPublishDelayLatency75pct = d.Mean*1000, d.P50*1000, d.P75*1000
	o.AggregatedPublishDelayLatency95pct, o.AggregatedPublishDelayLatency99pct, o.AggregatedPublishDelayLatency999pct = d.P95*1000, d.P99*1000, d.P999*1000
	o.AggregatedPublishDelayLatency9999pct, o.AggregatedPublishDelayLatencyMax = d.P9999*1000, d.Max*1000
	e := m.EndToEndLatency
	o.AggregatedEndToEndLatencyAvg, o.AggregatedEndToEndLatency50pct, o.AggregatedEndToEndLatency75pct, o.AggregatedEndToEndLatency95pct = e.Mean, e.P50, e.P75, e.P95
	o.AggregatedEndToEndLatency99pct, o.AggregatedEndToEndLatency999pct, o.AggregatedEndToEndLatency9999pct, o.AggregatedEndToEndLatencyMax = e.P99, e.P999, e.P9999, e.Max
	return o
}

// appendLatency appends l's mean and percentiles, multiplied by scale, to
// the eight lists.
func appendLatency(l metrics.Latency, scale float64, lists ...*[]float64) {
	vals := []float64{l.Mean, l.P50, l.P75, l.P95, l.P99, l.P999, l.P9999, l.Max}
	for i, dst := range lists {
		*dst = append(*dst, vals[i]*scale)
	}
}
