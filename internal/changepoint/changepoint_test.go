package changepoint

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// levels returns a series of len(lengths) flat stretches, stretch i holding
// lengths[i] values around means[i], with normal noise of standard
// deviation cv·mean, drawn from seed.
func levels(seed uint64, cv float64, means []float64, lengths []int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var s []float64
	for i, m := range means {
		for range lengths[i] {
			s = append(s, m*(1+cv*rng.NormFloat64()))
		}
	}
	return s
}

// with returns s with s[i] set to v.
func with(s []float64, i int, v float64) []float64 {
	s = slices.Clone(s)
	s[i] = v
	return s
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name   string
		series []float64
		opts   Options
		want   []int // change point indices
		err    error
	}{
		// Noise alone, 1% around 100, is no change.
		{"no shift", levels(1, 0.01, []float64{100}, []int{60}), Options{}, nil, nil},
		// A 20% step up in the middle is found at its first value.
		{"one shift", levels(2, 0.01, []float64{100, 120}, []int{30, 30}), Options{}, []int{30}, nil},
		// Up and down again: both edges, each at its first value.
		{"two shifts", levels(3, 0.01, []float64{100, 120, 100}, []int{25, 25, 25}), Options{}, []int{25, 50}, nil},
		// Three levels climbing: the recursion finds the second step in a
		// segment the first split left.
		{"staircase", levels(4, 0.01, []float64{100, 110, 125}, []int{20, 20, 20}), Options{}, []int{20, 40}, nil},
		// One run ten times slower is a spike, not a change.
		{"single outlier", with(levels(5, 0.01, []float64{100}, []int{60}), 30, 1000), Options{}, nil, nil},
		// The same level with ten times the noise from run 30 on: the
		// statistic sees a change of spread too.
		{"spread change", append(levels(9, 0.01, []float64{100}, []int{30}), levels(109, 0.10, []float64{100}, []int{30})...), Options{}, []int{30}, nil},
		// However large, a single outlier is not a change: its distance to
		// the other side is offset by its distance to its own side.
		{"huge single outlier", with(levels(5, 0.01, []float64{100}, []int{60}), 45, 1e9), Options{}, nil, nil},
		// An outlier in the first or last run is no change either.
		{"outlier first", with(levels(6, 0.01, []float64{100}, []int{40}), 0, 300), Options{}, nil, nil},
		// The last run 50% slower: one value after the change is below the
		// minimum segment, so it is not (yet) a change point.
		{"one point shift at the end", levels(7, 0.01, []float64{100, 150}, []int{39, 1}), Options{}, nil, nil},
		// Four slow runs in a row are a change of distribution the test
		// sees, though shorter than MinSegment: reported as a segment of
		// MinSegment values that holds them (and one run of the old level).
		{"burst of four", levels(6, 0.01, []float64{100, 1000, 100}, []int{28, 4, 28}), Options{}, []int{28, 33}, nil},
		// Likewise four slow runs at the end: the change is placed where the
		// last segment reaches MinSegment, one run early.
		{"four point shift at the end", levels(8, 0.01, []float64{100, 150}, []int{36, 4}), Options{}, []int{35}, nil},
		// Five values after the change reach MinSegment: reported.
		{"five point shift at the end", levels(9, 0.01, []float64{100, 150}, []int{35, 5}), Options{}, []int{35}, nil},
		// With MinSegment 2 the same four values are a change.
		{"four point shift, MinSegment 2", levels(8, 0.01, []float64{100, 150}, []int{36, 4}), Options{MinSegment: 2}, []int{36}, nil},
		// A constant series has no split better than any other.
		{"constant", levels(10, 0, []float64{42}, []int{50}), Options{}, nil, nil},
		// All zeros: nothing to scale, nothing to find.
		{"zeros", make([]float64, 20), Options{}, nil, nil},
		// Values near the largest float: distances must not overflow.
		{"huge values", levels(11, 0.01, []float64{1e307, 1.5e307}, []int{20, 20}), Options{}, []int{20}, nil},
		// Negative values: the level, not the sign, matters.
		{"negative", levels(12, 0.01, []float64{-100, -120}, []int{20, 20}), Options{}, []int{20}, nil},
		// A NaN (a missing result) is rejected, naming its index.
		{"NaN", with(levels(13, 0.01, []float64{100}, []int{20}), 7, math.NaN()), Options{}, nil, ErrNotFinite},
		// So is an infinity.
		{"Inf", with(levels(13, 0.01, []float64{100}, []int{20}), 3, math.Inf(-1)), Options{}, nil, ErrNotFinite},
		// Nine values cannot hold two segments of five.
		{"shorter than two segments", levels(14, 0.01, []float64{100, 200}, []int{5, 4}), Options{}, nil, ErrTooShort},
		// Twelve values: two segments of six, perfectly apart, beat all but
		// a handful of the 924 ways to split them.
		{"twelve values", levels(15, 0.01, []float64{100, 200}, []int{6, 6}), Options{}, []int{6}, nil},
		// An empty series is too short.
		{"empty", nil, Options{}, nil, ErrTooShort},
		// A segment of one value has no spread: refused.
		{"MinSegment 1", levels(16, 0.01, []float64{100}, []int{20}), Options{MinSegment: 1}, nil, ErrInvalidOptions},
		// 99 permutations cannot give p <= 0.001.
		{"p-value out of reach", levels(16, 0.01, []float64{100}, []int{20}), Options{Permutations: 99, MaxPValue: 0.001}, nil, ErrInvalidOptions},
		// A p-value level of 1 accepts everything: refused.
		{"MaxPValue 1", levels(16, 0.01, []float64{100}, []int{20}), Options{MaxPValue: 1}, nil, ErrInvalidOptions},
		// Negative permutations.
		{"negative permutations", levels(16, 0.01, []float64{100}, []int{20}), Options{Permutations: -1}, nil, ErrInvalidOptions},
		// A Direction out of range.
		{"bad direction", levels(16, 0.01, []float64{100}, []int{20}), Options{Direction: 7}, nil, ErrInvalidOptions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cps, err := Detect(c.series, c.opts)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if got := indices(cps); !slices.Equal(got, c.want) {
				t.Errorf("change points at %v, want %v (%+v)", got, c.want, cps)
			}
		})
	}
}

func indices(cps []ChangePoint) []int {
	var idx []int
	for _, c := range cps {
		idx = append(idx, c.Index)
	}
	return idx
}

// TestChangePointFields checks what a change point reports: its segments
// up to the neighbouring change points, their levels and spreads, the
// shift, the p-value and the effect for each direction.
func TestChangePointFields(t *testing.T) {
	// Exact values: levels 10, 12 (with one outlier) and 9.
	s := []float64{
		10, 10, 11, 9, 10, 10, 10, 10,
		12, 12, 13, 11, 12, 12, 12, 30,
		9, 9, 9, 9, 9, 9, 9, 9,
	}
	cps, err := Detect(s, Options{MinSegment: 4, Direction: HigherIsWorse})
	if err != nil {
		t.Fatal(err)
	}
	if got := indices(cps); !slices.Equal(got, []int{8, 16}) {
		t.Fatalf("change points at %v, want [8 16]", got)
	}
	up, down := cps[0], cps[1]
	if up.Before != (Segment{Start: 0, End: 8, Mean: 10, Median: 10, StdDev: math.Sqrt(2.0 / 7), MAD: 0}) {
		t.Errorf("first Before = %+v", up.Before)
	}
	if up.After != down.Before {
		t.Errorf("the segment between two change points differs: %+v and %+v", up.After, down.Before)
	}
	// The outlier (30) pulls the mean, not the median nor the MAD.
	if a := up.After; a.Start != 8 || a.End != 16 || a.Mean != 14.25 || a.Median != 12 || a.MAD != 0 {
		t.Errorf("first After = %+v, want [8,16) mean 14.25 median 12 MAD 0", a)
	}
	if up.Shift != 4.25 || up.RelativeShift != 0.425 {
		t.Errorf("first shift %v (%v relative), want 4.25 (0.425)", up.Shift, up.RelativeShift)
	}
	if down.After.Mean != 9 || down.After.StdDev != 0 || down.Shift != -5.25 {
		t.Errorf("second: after %+v, shift %v", down.After, down.Shift)
	}
	for _, c := range cps {
		if c.PValue <= 0 || c.PValue > DefaultMaxPValue || c.Confidence() != 1-c.PValue {
			t.Errorf("change at %d: p-value %v, confidence %v", c.Index, c.PValue, c.Confidence())
		}
	}
	if up.Effect != Regression || down.Effect != Improvement {
		t.Errorf("higher is worse: effects %v, %v, want regression, improvement", up.Effect, down.Effect)
	}

	better, err := Detect(s, Options{MinSegment: 4, Direction: HigherIsBetter})
	if err != nil {
		t.Fatal(err)
	}
	if better[0].Effect != Improvement || better[1].Effect != Regression {
		t.Errorf("higher is better: effects %v, %v, want improvement, regression", better[0].Effect, better[1].Effect)
	}
	unknown, err := Detect(s, Options{MinSegment: 4})
	if err != nil {
		t.Fatal(err)
	}
	if unknown[0].Effect != Unclassified || unknown[0].Effect.String() != "unclassified" {
		t.Errorf("no direction: effect %v, want unclassified", unknown[0].Effect)
	}
}

// TestRelativeShiftFromZero: a level of 0 has no relative change.
func TestRelativeShiftFromZero(t *testing.T) {
	s := levels(1, 0, []float64{0, 5}, []int{10, 10})
	cps, err := Detect(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 1 || cps[0].Shift != 5 || cps[0].RelativeShift != 0 {
		t.Errorf("got %+v, want one change of 5 with RelativeShift 0", cps)
	}
}

// TestDetectIsReproducible: the same seed gives the same p-values; the
// series is left as it was.
func TestDetectIsReproducible(t *testing.T) {
	s := levels(21, 0.03, []float64{100, 104}, []int{40, 40})
	orig := slices.Clone(s)
	a, errA := Detect(s, Options{Seed: 7})
	b, errB := Detect(s, Options{Seed: 7})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !slices.Equal(a, b) {
		t.Errorf("two detections differ:\n%+v\n%+v", a, b)
	}
	if !slices.Equal(s, orig) {
		t.Error("Detect modified its input")
	}
}

// TestShuffleIsUniform checks the shuffler's permutations of 3 values are
// equally likely (a chi-square test, far from its 1% critical value).
func TestShuffleIsUniform(t *testing.T) {
	r := newShuffler(3)
	counts := map[[3]float64]int{}
	const n = 60000
	for range n {
		s := []float64{1, 2, 3}
		r.shuffle(s)
		counts[[3]float64(s)]++
	}
	if len(counts) != 6 {
		t.Fatalf("%d distinct permutations, want 6", len(counts))
	}
	var chi2 float64
	for _, c := range counts {
		d := float64(c) - n/6
		chi2 += d * d / (n / 6)
	}
	if chi2 > 15.09 { // chi-square, 5 degrees of freedom, p = 0.01
		t.Errorf("chi-square %v over %v", chi2, counts)
	}
}

// TestBestSplitMatchesDefinition compares the running sums with the energy
// statistic computed from its definition, for every (τ, κ).
func TestBestSplitMatchesDefinition(t *testing.T) {
	s := levels(5, 0.1, []float64{1, 1.3, 0.8}, []int{7, 6, 8})
	for _, minSeg := range []int{2, 3, 5} {
		want := split{ok: true, q: math.Inf(-1)}
		for tau := minSeg; tau <= len(s)-minSeg; tau++ {
			for kappa := tau + minSeg; kappa <= len(s); kappa++ {
				if q := energyQ(s[:tau], s[tau:kappa]); q > want.q {
					want.q, want.tau = q, tau
				}
			}
		}
		got := newWorkspace(len(s)).bestSplit(s, minSeg)
		if got.tau != want.tau || math.Abs(got.q-want.q) > 1e-12 {
			t.Errorf("MinSegment %d: best split %+v, want %+v", minSeg, got, want)
		}
	}
}

// energyQ is Matteson and James's q̂(X, Y) with alpha = 1, from its
// definition.
func energyQ(x, y []float64) float64 {
	mean := func(a, b []float64, within bool) float64 {
		var sum float64
		var pairs int
		for i := range a {
			for j := range b {
				if within && j <= i {
					continue
				}
				sum += math.Abs(a[i] - b[j])
				pairs++
			}
		}
		return sum / float64(pairs)
	}
	n, m := float64(len(x)), float64(len(y))
	e := 2*mean(x, y, false) - mean(x, x, true) - mean(y, y, true)
	return n * m / (n + m) * e
}

func ExampleDetect() {
	latencyMs := []float64{
		10.1, 9.9, 10.0, 10.2, 9.8, 10.1, 10.0, 9.9, 10.1, 10.0,
		12.1, 11.9, 12.0, 12.2, 11.8, 12.1, 12.0, 11.9,
	}
	cps, err := Detect(latencyMs, Options{Direction: HigherIsWorse})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cps {
		fmt.Printf("run %d: %s, %.1f -> %.1f ms (%+.0f%%), p = %.3f\n",
			c.Index, c.Effect, c.Before.Mean, c.After.Mean, 100*c.RelativeShift, c.PValue)
	}
	// Output:
	// run 10: regression, 10.0 -> 12.0 ms (+20%), p = 0.005
}

func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{100, 500, 1000} {
		s := levels(1, 0.03, []float64{100, 110}, []int{n / 2, n - n/2})
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Detect(s, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
