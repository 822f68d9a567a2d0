package results

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestOMBMeanings checks that the OMB JSON means what OMB means: publish
// latency from the actual send (service time), publish delay is the send
// lag in microseconds, and the warmup and drain are left out of the series.
func TestOMBMeanings(t *testing.T) {
	iv := func(phase Phase, svc, pub, lag float64) Interval {
		return Interval{Phase: phase, StartSeconds: 0, EndSeconds: 1, Traffic: Traffic{
			PublishRate: 10, ServiceTime: metrics.Latency{P50: svc, P99: svc}, PublishLatency: metrics.Latency{P50: pub, P99: pub},
			SendLag: metrics.Latency{P50: lag, P99: lag},
		}}
	}
	r := &Run{
		Workload:  &workload.Workload{Name: "w", MessageSize: 100},
		Intervals: []Interval{iv(Warmup, 9, 90, 9), iv(Measure, 1, 5, 4), iv(Measure, 2, 6, 4), iv(Drain, 7, 70, 0)},
		Measured: Aggregate{Traffic: Traffic{ServiceTime: metrics.Latency{P99: 1.5}, PublishLatency: metrics.Latency{P99: 5.5},
			SendLag: metrics.Latency{P99: 0.25}}},
	}
	o := OMB(r)
	if len(o.PublishRate) != 2 || len(o.PublishLatency99pct) != 2 {
		t.Fatalf("series has %d intervals, want the 2 measured ones", len(o.PublishRate))
	}
	if o.PublishLatency50pct[0] != 1 || o.PublishLatency50pct[1] != 2 {
		t.Errorf("publishLatency50pct %v: want the service times 1, 2", o.PublishLatency50pct)
	}
	if o.PublishDelayLatency99pct[0] != 4000 {
		t.Errorf("publishDelayLatency99pct %v: want the send lag in µs (4000)", o.PublishDelayLatency99pct)
	}
	if o.AggregatedPublishLatency99pct != 1.5 || o.AggregatedPublishDelayLatency99pct != 250 {
		t.Errorf("aggregated publish %v delay %v: want 1.5 ms and 250 µs", o.AggregatedPublishLatency99pct, o.AggregatedPublishDelayLatency99pct)
	}
}
