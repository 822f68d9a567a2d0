package maxrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// broker models a system under test: the producers can push up to
// producers msg/s, the broker sustains up to capacity msg/s (capacities,
// if set, gives it run by run), and its publish p99 grows as
// 1 ms / (1 - rate/saturation). The unthrottled probe achieves ceiling
// (a slow moment, if below the real limit); the first run, cold, achieves
// a tenth of its rate if cold is set.
type broker struct {
	ceiling, producers, capacity, saturation float64
	capacities                               []float64
	cold                                     bool
	runs                                     []float64
	// disturbed, if set, says whether other processes took the machine
	// in the given run (from 0): the run then achieves a tenth of its rate.
	disturbed func(run int) bool
}

func (b *broker) trial(_ context.Context, rate float64) (*results.Run, error) {
	b.runs = append(b.runs, rate)
	limit := b.capacity
	if n := len(b.runs) - 1; n < len(b.capacities) {
		limit = b.capacities[n]
	}
	achieved := rate
	if rate == 0 {
		achieved = b.ceiling
	}
	achieved = min(achieved, limit, max(b.producers, b.ceiling))
	if b.cold && len(b.runs) == 1 {
		achieved /= 10
	}
	disturbed := b.disturbed != nil && b.disturbed(len(b.runs)-1)
	if disturbed {
		achieved /= 10
	}
	p99 := 1 / max(1e-3, 1-achieved/b.saturation)
	res := &results.Run{ID: "r", Workload: &workload.Workload{Topics: 1, ProducersPerTopic: 1}}
	res.Measured.PublishRate = achieved
	res.Measured.PublishLatency = metrics.Latency{P50: p99 / 2, P99: p99, Max: 2 * p99}
	res.Measured.System = &results.System{Cores: 2, OtherCPU: 5}
	if disturbed {
		res.Measured.System.OtherCPU = 140
	}
	if rate > 0 {
		res.Target = &results.Target{Rate: rate, AchievedRate: achieved, Held: achieved >= 0.99*rate}
		if !res.Target.Held {
			res.Target.Reason = "below target"
		}
	}
	return res, nil
}

func mustSLO(t *testing.T, s string) []Objective {
	t.Helper()
	o, err := ParseSLO(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func checkOutcome(t *testing.T, out Outcome, b *broker, lo, hi float64) {
	t.Helper()
	s := out.Search
	if s.Rate < lo || s.Rate > hi {
		t.Fatalf("found %.0f msg/s, want within [%.0f, %.0f]; steps %v", s.Rate, lo, hi, b.runs)
	}
	for _, st := range s.Steps {
		if st.TargetRate > s.Rate && st.Held {
			t.Fatalf("a held step at %.0f is above the reported %.0f", st.TargetRate, s.Rate)
		}
		if st.TargetRate == s.Rate && !st.Held {
			t.Fatalf("reported rate %.0f was a failed step", s.Rate)
		}
	}
	if out.Best == nil || out.Best.Target.Rate != s.Rate {
		t.Fatalf("best run %+v does not match the rate %.0f", out.Best, s.Rate)
	}
	if len(b.runs) > 2+10+2 || b.runs[0] != 0 || b.runs[1] != 0 || s.Steps[0].Kind != results.StepWarmup || s.Steps[1].Kind != results.StepProbe {
		t.Fatalf("runs %v: want a warm-up and a probe first, at most 10 steps and 2 repeats", b.runs)
	}
	tried := map[float64]bool{}
	for _, st := range s.Steps {
		if st.Kind != results.StepSearch {
			continue
		}
		if tried[st.TargetRate] {
			t.Fatalf("runs %v: %.0f msg/s tried twice", b.runs, st.TargetRate)
		}
		tried[st.TargetRate] = true
	}
}

func TestSearchFindsCapacity(t *testing.T) {
	b := &broker{ceiling: 120_000, producers: 120_000, capacity: 100_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial})
	if err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, out, b, 95_000, 100_000)
	if out.Search.Ceiling != 100_000 {
		t.Errorf("ceiling %.0f, want the probe's achieved 100000", out.Search.Ceiling)
	}
}

func TestSearchRespectsSLO(t *testing.T) {
	// p99 < 5 ms holds below 0.8 x saturation = 120k.
	b := &broker{ceiling: 200_000, producers: 200_000, capacity: 200_000, saturation: 150_000}
	out, err := Search(context.Background(), Config{Trial: b.trial, SLO: mustSLO(t, "p99<5ms")})
	if err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, out, b, 114_000, 120_000)
	var sawSLOFailure bool
	for _, st := range out.Search.Steps {
		sawSLOFailure = sawSLOFailure || strings.Contains(st.Reason, "publish.p99<5ms")
	}
	if !sawSLOFailure {
		t.Errorf("no step failed on the objective: %+v", out.Search.Steps)
	}
}

func TestSearchHoldsAtCeiling(t *testing.T) {
	// The producers' own limit is the ceiling: the step above it fails, and
	// the search settles on the ceiling, rounded (a measured ceiling is
	// rarely a whole number of messages per second).
	for _, ceiling := range []float64{50_000, 50_000.4} {
		b := &broker{ceiling: ceiling, producers: ceiling, capacity: 1e9, saturation: 1e12}
		out, err := Search(context.Background(), Config{Trial: b.trial, Repeats: 1})
		if err != nil {
			t.Fatal(err)
		}
		checkOutcome(t, out, b, 50_000, 50_000)
		if rp := out.Search.Repeatability; rp == nil || rp.Held != 2 || rp.Runs != 2 || rp.Above <= 50_000 || rp.Above > 62_500 || rp.AboveHeld != 0 || rp.AboveRuns != 2 {
			t.Errorf("repeatability %+v: want 50000 held 2 of 2, the failed rate above it failed 2 of 2", rp)
		}
	}
}

// TestSearchLooksAboveASlowProbe: a probe that met a slow moment does not
// cap the search: steps holding at its ceiling are followed by higher ones.
func TestSearchLooksAboveASlowProbe(t *testing.T) {
	b := &broker{ceiling: 600_000, producers: 2_000_000, capacity: 900_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, MaxSteps: 12})
	if err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, out, b, 855_000, 900_000)
	if s := out.Search; s.Ceiling != 600_000 || s.Rate <= s.Ceiling {
		t.Errorf("ceiling %.0f, rate %.0f: want the probe's 600000 and a rate above it", s.Ceiling, s.Rate)
	}
}

// TestSearchWarmsUpFirst: a cold first run is the unjudged warm-up, so the
// probe measures a warm broker.
func TestSearchWarmsUpFirst(t *testing.T) {
	b := &broker{ceiling: 100_000, producers: 100_000, capacity: 100_000, saturation: 1e12, cold: true}
	out, err := Search(context.Background(), Config{Trial: b.trial})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Search; s.Steps[0].AchievedRate != 10_000 || s.Ceiling != 100_000 {
		t.Errorf("warm-up achieved %.0f, ceiling %.0f: want the cold 10000 left out of the ceiling of 100000", s.Steps[0].AchievedRate, s.Ceiling)
	}
}

// TestSearchStatesRepeatability: a found rate that fails when run again is
// reported as not repeatable.
func TestSearchStatesRepeatability(t *testing.T) {
	// Runs: warm-up, probe, 6250 .. 100000 (5 steps), 125000, 112500,
	// 106250, 103125; then the repeats, where the broker slows to 90000.
	caps := []float64{1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 100_000, 100_000, 100_000, 100_000, 100_000, 90_000, 90_000}
	b := &broker{ceiling: 100_000, producers: 200_000, capacity: 100_000, capacities: caps, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, Repeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	rp := out.Search.Repeatability
	if rp == nil || rp.Rate != 100_000 || rp.Held != 1 || rp.Runs != 2 {
		t.Fatalf("repeatability %+v (runs %v): want 100000 held 1 of 2", rp, b.runs)
	}
	if d := rp.Describe(); !strings.Contains(d, "NOT REPEATABLE") {
		t.Errorf("Describe() = %q, want NOT REPEATABLE", d)
	}
}

func TestSearchNothingHolds(t *testing.T) {
	b := &broker{ceiling: 10_000, producers: 10_000, capacity: 10_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, SLO: mustSLO(t, "p50<100us"), MaxSteps: 4})
	if err != nil {
		t.Fatal(err)
	}
	if out.Search.Rate != 0 || out.Best != nil || len(out.Search.Steps) != 6 || out.Search.Repeatability != nil {
		t.Fatalf("nothing meets p50<100us, yet: rate %.0f, best %v, %d steps", out.Search.Rate, out.Best, len(out.Search.Steps))
	}
}

func TestSearchStopsOnError(t *testing.T) {
	b := &broker{ceiling: 10_000, producers: 10_000, capacity: 10_000, saturation: 1e12}
	boom := errors.New("broker gone")
	calls := 0
	trial := func(ctx context.Context, rate float64) (*results.Run, error) {
		calls++
		res, _ := b.trial(ctx, rate)
		if calls == 3 {
			return res, boom
		}
		return res, nil
	}
	out, err := Search(context.Background(), Config{Trial: trial})
	if !errors.Is(err, boom) || len(out.Search.Steps) != 3 || out.Search.Steps[2].Held {
		t.Fatalf("err %v, steps %+v: want the error and 3 steps, the last not held", err, out.Search.Steps)
	}
}

func TestParseSLO(t *testing.T) {
	got, err := ParseSLO(" p99<50ms, e2e.p99.9<1s ,publish.max<2s")
	if err != nil {
		t.Fatal(err)
	}
	want := []Objective{{"publish", 99, 50 * time.Millisecond}, {"e2e", 99.9, time.Second}, {"publish", 100, 2 * time.Second}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("objective %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "p99", "p98<5ms", "p99<fast", "p99<-5ms", "x.p99<5ms", ","} {
		if _, err := ParseSLO(bad); !errors.Is(err, ErrSLO) {
			t.Errorf("ParseSLO(%q) = %v, want ErrSLO", bad, err)
		}
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"p99<50ms", "e2e.p99.9<1s,p50<1ms", "max<2s", "p99<", "<", "e2e.<5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		objs, err := ParseSLO(s)
		if err != nil {
			if !errors.Is(err, ErrSLO) {
				t.Fatalf("error %v does not wrap ErrSLO", err)
			}
			return
		}
		// Whatever parses formats to something that parses to the same.
		var parts []string
		for _, o := range objs {
			if o.Limit <= 0 || (o.Metric != "publish" && o.Metric != "e2e") {
				t.Fatalf("ParseSLO(%q) gave %+v", s, o)
			}
			parts = append(parts, o.String())
		}
		again, err := ParseSLO(strings.Join(parts, ","))
		if err != nil || len(again) != len(objs) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
		for i := range objs {
			if again[i] != objs[i] {
				t.Fatalf("round trip of %q: %+v became %+v", s, objs[i], again[i])
			}
		}
	})
}

// TestSearchRemakesDisturbedSteps: steps that failed while other processes
// took the machine are made again once it is quiet, and the search finds
// the broker's rate as on a quiet machine; the disturbed steps stay on
// the curve, marked.
func TestSearchRemakesDisturbedSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &broker{ceiling: 100000, producers: 100000, capacity: 50000, saturation: 1e9,
			disturbed: func(run int) bool { return run == 3 || run == 4 }}
		quiet := func() *results.System { return &results.System{Cores: 2, OtherCPU: 5} }
		start := time.Now()
		out, err := Search(context.Background(), Config{Trial: b.trial, Sample: quiet, MaxSteps: 12})
		if err != nil {
			t.Fatal(err)
		}
		if s := out.Search; s.Rate < 47500 || s.Rate > 50000 || s.NotMeasurable != "" {
			t.Fatalf("found %.0f msg/s (%q), want 47500-50000; runs %v", s.Rate, s.NotMeasurable, b.runs)
		}
		var remade int
		steps := out.Search.Steps
		for i, st := range steps {
			if !st.Disturbed {
				continue
			}
			if st.Held || !strings.Contains(st.Reason, "disturbed by other processes: other processes used 1.4 of 2 cores") {
				t.Errorf("disturbed step %+v", st)
			}
			if i+1 < len(steps) && steps[i+1].TargetRate == st.TargetRate {
				remade++
			}
		}
		if remade != 2 {
			t.Errorf("%d disturbed steps made again, want 2; runs %v", remade, b.runs)
		}
		// Each remake waited for the machine to be quiet for 3 s.
		if waited := time.Since(start); waited < 2*quietFor {
			t.Errorf("the search waited %s for quiet", waited)
		}
	})
}

// TestSearchNotMeasurableOnADisturbedMachine: a machine that stays
// disturbed gives no number, but a reason and the disturbed verdict;
// so does one that is never quiet long enough to make a step again.
func TestSearchNotMeasurableOnADisturbedMachine(t *testing.T) {
	busy := func() *results.System { return &results.System{Cores: 2, OtherCPU: 150} }
	quiet := func() *results.System { return &results.System{Cores: 2, OtherCPU: 5} }
	for _, tc := range []struct {
		name   string
		sample func() *results.System
		want   string
	}{
		{"every step disturbed", quiet, "disturbed by other processes 3 times"},
		{"never quiet", busy, "after 1m0s they still used 1.5 cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &broker{ceiling: 100000, producers: 100000, capacity: 50000, saturation: 1e9,
					disturbed: func(run int) bool { return run >= 2 }}
				out, err := Search(context.Background(), Config{Trial: b.trial, Sample: tc.sample})
				if err != nil {
					t.Fatal(err)
				}
				s := out.Search
				if s.Rate != 0 || !strings.Contains(s.NotMeasurable, tc.want) {
					t.Fatalf("search %+v: want no rate, not measurable with %q", s, tc.want)
				}
				run := &results.Run{MaxRate: &s}
				if v := results.Judge(run); v.Kind != results.Disturbed {
					t.Errorf("verdict %+v, want disturbed", v)
				}
			})
		})
	}
}
