package maxrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// broker models a system under test: it sustains up to capacity msg/s, and
// its publish p99 grows as 1 ms / (1 - rate/saturation).
type broker struct {
	ceiling, capacity, saturation float64
	runs                          []float64
}

func (b *broker) trial(_ context.Context, rate float64) (*results.Run, error) {
	b.runs = append(b.runs, rate)
	achieved := rate
	if rate == 0 {
		achieved = b.ceiling
	}
	achieved = min(achieved, b.capacity)
	p99 := 1 / max(1e-3, 1-achieved/b.saturation)
	res := &results.Run{ID: "r", Workload: &workload.Workload{Topics: 1, ProducersPerTopic: 1}}
	res.Measured.PublishRate = achieved
	res.Measured.PublishLatency = metrics.Latency{P50: p99 / 2, P99: p99, Max: 2 * p99}
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
	if len(b.runs) > 11 || b.runs[0] != 0 {
		t.Fatalf("runs %v: want the probe first and at most 10 steps", b.runs)
	}
	tried := map[float64]bool{}
	for _, r := range b.runs[1:] {
		if tried[r] {
			t.Fatalf("runs %v: %.0f msg/s tried twice", b.runs, r)
		}
		tried[r] = true
	}
}

func TestSearchFindsCapacity(t *testing.T) {
	b := &broker{ceiling: 120_000, capacity: 100_000, saturation: 1e12}
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
	b := &broker{ceiling: 200_000, capacity: 200_000, saturation: 150_000}
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
	// A measured ceiling is rarely a whole number of messages per second;
	// the search tries it once, rounded, and stops there.
	for _, ceiling := range []float64{50_000, 50_000.4} {
		b := &broker{ceiling: ceiling, capacity: 1e9, saturation: 1e12}
		out, err := Search(context.Background(), Config{Trial: b.trial})
		if err != nil {
			t.Fatal(err)
		}
		checkOutcome(t, out, b, 50_000, 50_000)
		if len(b.runs) != 6 {
			t.Errorf("ceiling %.1f: runs %v, want the probe and 5 doublings from ceiling/16", ceiling, b.runs)
		}
	}
}

func TestSearchNothingHolds(t *testing.T) {
	b := &broker{ceiling: 10_000, capacity: 10_000, saturation: 1e12}
	out, err := Search(context.Background(), Config{Trial: b.trial, SLO: mustSLO(t, "p50<100us"), MaxSteps: 4})
	if err != nil {
		t.Fatal(err)
	}
	if out.Search.Rate != 0 || out.Best != nil || len(out.Search.Steps) != 5 {
		t.Fatalf("nothing meets p50<100us, yet: rate %.0f, best %v, %d steps", out.Search.Rate, out.Best, len(out.Search.Steps))
	}
}

func TestSearchStopsOnError(t *testing.T) {
	b := &broker{ceiling: 10_000, capacity: 10_000, saturation: 1e12}
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
