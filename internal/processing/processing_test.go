package processing

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Time
		err  string // "" for valid
	}{
		{"fixed", Time{Fixed: 2 * time.Millisecond}, ""},
		{"uniform", Time{Uniform: &Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}}, ""},
		{"uniform of one value", Time{Uniform: &Uniform{Min: time.Millisecond, Max: time.Millisecond}}, ""},
		{"log-normal unclamped", Time{LogNormal: &LogNormal{Median: time.Millisecond, Sigma: 0.5}}, ""},
		{"log-normal clamped", Time{LogNormal: &LogNormal{Median: time.Millisecond, Sigma: 0.5, Max: 5 * time.Millisecond}}, ""},
		// Sad paths.
		{"nothing", Time{}, "exactly one"},
		{"two shapes", Time{Fixed: time.Millisecond, Uniform: &Uniform{Max: time.Millisecond}}, "exactly one"},
		{"negative fixed", Time{Fixed: -time.Millisecond}, "fixed: must be between"},
		{"fixed beyond the bound", Time{Fixed: 2 * MaxTime}, "fixed: must be between"},
		{"uniform upside down", Time{Uniform: &Uniform{Min: 3 * time.Millisecond, Max: time.Millisecond}}, "uniform.max: 1ms is below its min 3ms"},
		{"log-normal without median", Time{LogNormal: &LogNormal{Sigma: 0.5}}, "logNormal.median"},
		{"log-normal without sigma", Time{LogNormal: &LogNormal{Median: time.Millisecond}}, "logNormal.sigma"},
		{"log-normal max below median", Time{LogNormal: &LogNormal{Median: 2 * time.Millisecond, Sigma: 1, Max: time.Millisecond}}, "logNormal.max"},
	} {
		err := tc.t.Validate()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

// TestMeanMatchesDraws: each shape's Mean is the mean of its draws, to
// within what 200000 draws make of it.
func TestMeanMatchesDraws(t *testing.T) {
	for _, tm := range []Time{
		{Fixed: 2 * time.Millisecond},
		{Uniform: &Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}},
		{LogNormal: &LogNormal{Median: 2 * time.Millisecond, Sigma: 0.5}},
		{LogNormal: &LogNormal{Median: 2 * time.Millisecond, Sigma: 1.5, Max: 10 * time.Millisecond}},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 200000
		var sum float64
		for range n {
			sum += float64(tm.draw(rng))
		}
		if got, want := sum/n, float64(tm.Mean()); math.Abs(got-want) > 0.01*want {
			t.Errorf("%+v: mean of draws %.0f ns, Mean %.0f ns", tm, got, want)
		}
	}
}

// TestWorkerKeepsItsSchedule: a worker that always has a next message
// spends exactly its times, so a second with 2 ms per message ends 500
// messages after it started, also when each message comes a little after
// the previous one's end; one idle for longer than catchUpWithin starts
// its next message's time afresh.
func TestWorkerKeepsItsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := Time{Fixed: 2 * time.Millisecond}.NewWorker(1, 0)
		start := time.Now()
		for range 500 {
			w.Process()
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("500 messages of 2 ms took %s, want 1s", took)
		}
		// The driver's 0.5 ms between messages is within catchUpWithin:
		// the consumer counts as busy throughout, and the gaps are made up
		// as an overrun sleep would be.
		start = time.Now()
		for range 500 {
			time.Sleep(500 * time.Microsecond)
			w.Process()
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("500 messages of 2 ms, 0.5 ms apart, took %s, want 1s", took)
		}
		time.Sleep(time.Second)
		start = time.Now()
		w.Process()
		if took := time.Since(start); took != 2*time.Millisecond {
			t.Errorf("a message after an idle second took %s, want 2ms", took)
		}
	})
}

// TestWorkerSeeds: workers of the same seed and consumer draw the same
// times; another consumer draws others; Time.Seed overrides the run's.
func TestWorkerSeeds(t *testing.T) {
	tm := Time{Uniform: &Uniform{Min: 0, Max: time.Second}}
	draws := func(w *Worker) [5]time.Duration {
		var d [5]time.Duration
		for i := range d {
			d[i] = w.t.draw(w.rng)
		}
		return d
	}
	if a, b := draws(tm.NewWorker(7, 1)), draws(tm.NewWorker(7, 1)); a != b {
		t.Errorf("same seed and consumer: %v and %v", a, b)
	}
	if a, b := draws(tm.NewWorker(7, 1)), draws(tm.NewWorker(7, 2)); a == b {
		t.Errorf("consumers 1 and 2 drew the same %v", a)
	}
	seeded := tm
	seeded.Seed = 9
	if a, b := draws(seeded.NewWorker(7, 1)), draws(tm.NewWorker(9, 1)); a != b {
		t.Errorf("Time.Seed 9: %v, want the run seed 9's %v", a, b)
	}
}

func TestString(t *testing.T) {
	for _, c := range []struct {
		t    Time
		want string
	}{
		{Time{Fixed: 4 * time.Millisecond}, "4ms"},
		{Time{Uniform: &Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}}, "uniform 1ms to 3ms (mean 2ms)"},
		{Time{LogNormal: &LogNormal{Median: 2 * time.Millisecond, Sigma: 0.5}}, "log-normal, median 2ms, sigma 0.5 (mean 2.266ms)"},
		{Time{LogNormal: &LogNormal{Median: 2 * time.Millisecond, Sigma: 0.5, Max: 3 * time.Millisecond}}, "log-normal, median 2ms, sigma 0.5, at most 3ms (mean 2.036ms)"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}
