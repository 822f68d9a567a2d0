package maxrate

import (
	"context"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// rampIntervals is how many measured intervals the model's ramp has.
const rampIntervals = 20

// ramp is the model broker's ramp run: rampIntervals intervals whose
// target rises from `from` to `to`, each achieving what the broker's
// capacity for a ramp allows (rampCapacity, or capacity), with the
// publish p99 of its constant runs at that rate.
func (b *broker) ramp(rampCapacity float64) RampTrial {
	return func(_ context.Context, from, to float64) (*results.Run, error) {
		b.runs = append(b.runs, -1) // -1: a ramp
		limit := b.capacity
		if rampCapacity > 0 {
			limit = rampCapacity
		}
		res := &results.Run{ID: "ramp", Workload: &workload.Workload{Topics: 1, ProducersPerTopic: 1}}
		for i := range rampIntervals {
			target := from + (to-from)*(float64(i)+0.5)/rampIntervals
			achieved := min(target, limit, max(b.producers, b.ceiling))
			p99 := 1 / max(1e-3, 1-achieved/b.saturation)
			res.Intervals = append(res.Intervals, results.Interval{Phase: results.Measure, EndSeconds: float64(i + 1), TargetRate: target,
				Traffic: results.Traffic{PublishRate: achieved, PublishLatency: metrics.Latency{P50: p99 / 2, P99: p99}}})
		}
		res.Measured.PublishRate = (from + to) / 2
		return res, nil
	}
}

// TestRampSearchFindsCapacity: the probe finds the capacity of 100000
// msg/s, the ramp rises from 6250 to 125000 in steps of 5937.5 and falls
// more than 2% short of its target in its 17th interval (104219); the
// interval before it, at 98281, holds as a constant run. Four runs in
// all, where the step search needs more.
func TestRampSearchFindsCapacity(t *testing.T) {
	b := &broker{ceiling: 120_000, producers: 120_000, capacity: 100_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, Ramp: b.ramp(0)})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Search
	if s.Rate != 98_281 || out.Best == nil || len(b.runs) != 4 {
		t.Fatalf("rate %.0f after runs %v: want 98281 confirmed by the 4th run", s.Rate, b.runs)
	}
	ramp := s.Steps[2]
	if ramp.Kind != results.StepRamp || ramp.TargetRate != 98_281.25 || !strings.Contains(ramp.Reason, "knee in the interval ending at 17.0 s (target 104219 msg/s): achieved 100000 of 104219 msg/s") {
		t.Errorf("ramp step %+v", ramp)
	}
	if line := results.RateStepLine(ramp); !strings.Contains(line, "ramp, knee at this target") {
		t.Errorf("ramp line %q", line)
	}
	step := &broker{ceiling: 120_000, producers: 120_000, capacity: 100_000, saturation: 1e12}
	if _, err := Search(context.Background(), Config{Trial: step.trial}); err != nil || len(step.runs) <= 4 {
		t.Errorf("the step search took %d runs (%v): want more than the ramp's 4", len(step.runs), err)
	}
}

// TestRampSearchRespectsSLO: the knee is where an interval's publish p99
// passes the objective (p99 < 5 ms below 120000 msg/s).
func TestRampSearchRespectsSLO(t *testing.T) {
	b := &broker{ceiling: 200_000, producers: 200_000, capacity: 200_000, saturation: 150_000}
	out, err := Search(context.Background(), Config{Trial: b.trial, Ramp: b.ramp(0), SLO: mustSLO(t, "p99<5ms")})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Search.Rate; r < 105_000 || r > 120_000 || !strings.Contains(out.Search.Steps[2].Reason, "publish.p99<5ms") {
		t.Errorf("rate %.0f, ramp %+v: want the objective's knee, 105000 to 120000", r, out.Search.Steps[2])
	}
}

// TestRampSearchStepsDownFromAKneeNotSustained: a broker that keeps up
// with a ramp's brief visit to 100000 msg/s but sustains only 90000
// fails the constant run at the knee; 10% below it holds.
func TestRampSearchStepsDownFromAKneeNotSustained(t *testing.T) {
	b := &broker{ceiling: 120_000, producers: 120_000, capacity: 90_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, Ramp: b.ramp(100_000), Repeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The probe's ceiling is 90000, so the ramp rises from 5625 to
	// 112500 in steps of 5343.75; its knee is at 99141.
	var tried []float64
	for _, st := range out.Search.Steps[3:] {
		if st.Kind == results.StepSearch {
			tried = append(tried, st.TargetRate)
		}
	}
	if len(tried) != 2 || tried[0] != 99_141 || out.Search.Rate != 89_227 {
		t.Errorf("constant runs at %v, rate %.0f: want 99141, then 89227 held", tried, out.Search.Rate)
	}
	if rp := out.Search.Repeatability; rp == nil || rp.Above != 99_141 || rp.AboveHeld != 0 {
		t.Errorf("repeatability %+v: want the failed 99141 above, failed again", rp)
	}
}

// TestRampSearchFallsBackToSteps: a ramp past its knee from its first
// interval says nothing of the rate: the search steps down from
// ceiling/16 as without a ramp.
func TestRampSearchFallsBackToSteps(t *testing.T) {
	b := &broker{ceiling: 100_000, producers: 100_000, capacity: 100_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, Ramp: b.ramp(1000), MaxSteps: 12})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Search; s.Steps[2].TargetRate != 0 || s.Rate < 95_000 || s.Rate > 100_000 {
		t.Errorf("ramp %+v, rate %.0f: want no knee rate, then the steps' 95000 to 100000", s.Steps[2], s.Rate)
	}
}
