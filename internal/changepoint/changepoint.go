// Package changepoint finds the points where a series of benchmark results
// changed level: the run at which a regression (or an improvement) began.
//
// # Method
//
// Detection is E-divisive means (Matteson and James, "A Nonparametric
// Approach for Multiple Change Point Analysis of Multivariate Data", 2014),
// the method Apache Otava (formerly DataStax's Hunter) is built on:
//
//   - Divergence. For a segment of the series, every split into a left part
//     X = Z[s:τ) and a right part Y = Z[τ:κ) (κ may stop short of the
//     segment's end, so a later change does not blur an earlier one) is
//     scored with the energy statistic, alpha = 1:
//     q̂ = nm/(n+m) · (2·mean|X−Y| − mean|X−X'| − mean|Y−Y'|).
//     It is large when values across the split are further apart than values
//     within each side. The split τ with the largest q̂ is the candidate.
//   - Significance. The candidate is tested with a permutation test: the
//     values of every current segment are shuffled within that segment
//     (which destroys any order, keeping the segmentation), the largest q̂
//     is searched again, Options.Permutations times. The p-value is
//     (1 + shuffles scoring at least as high) / (1 + shuffles). The
//     candidate is a change point when p ≤ Options.MaxPValue.
//   - Hierarchy. An accepted change point splits its segment in two; the
//     best candidate over all segments is tested next, until one is not
//     significant.
//
// Only time ordering matters, and no distribution is assumed: the statistic
// responds to any change of distribution (level most strongly, spread too).
// The sizes reported for a change point are of its level, in means and
// medians, so that a caller can tell a regression from an improvement.
//
// Computing q̂ for every (τ, κ) of a segment of length L takes O(L²) time
// with running sums and O(L) memory, so a test costs O(Permutations·n²):
// a hundred points take a few milliseconds, a thousand about a third of a
// second of CPU (BenchmarkDetect).
//
// # What it finds
//
// TestDetectionQuality runs Detect with its defaults on 100 synthetic
// histories per cell: 60 runs, a shift at run 30, normal noise, and one
// spike of +50% in each; a detection within 2 runs of the shift counts.
// The share of shifts found (recall), by size in noise standard deviations:
//
//   - 4 or more: all (5%, 10% or 20% at 1% noise; 20% at 3% or 5%)
//   - 3.3: 0.99 (10% at 3% noise)
//   - 2: about 0.9 (2% at 1% noise: 0.94; 10% at 5%: 0.88)
//   - 1.7: 0.82 (5% at 3% noise)
//   - 1: 0.26 (5% at 5% noise)
//   - 0.7 or less: below 0.1 (2% at 3% or 5% noise)
//
// Shifts of 1 to 2 standard deviations are also placed less precisely:
// about one detection in ten lands 3 to 10 runs off. A series
// with no shift is flagged at the test's level, 1% (TestFalseAlarmRate),
// spike or not. With noise of 3 to 5%, as short benchmark runs on a busy
// machine show, a 5% regression needs more runs on either side (or less
// noisy runs) to be seen surely.
//
// # Defaults and why
//
// MinSegment is 5: every segment, and so each side of every change point,
// holds at least 5 values. A single outlier, however large, is then never a
// change point: its distance to the values across a split is offset by its
// distance to the values on its own side, so it adds a bounded amount to q̂
// (TestDetect checks a spike of 10⁷ times the level). With segments of one
// value allowed, the within-side term vanishes and a lone spike scores as
// much as its size: the weakness of Hunter and Otava, whose default allows
// segments of any length. Otava pull request 150 reports such spikes
// flagged as change points and proposes a minimum segment length as an
// option; the original E-divisive (the R package ecp) has one, min.size =
// 30. A burst of consecutive outliers is another matter: it is a change of
// distribution, and a burst of more than about half of MinSegment values is
// reported, as a segment of MinSegment values holding it; a pair of
// 10-sigma outliers is reported in about 8% of 60-point series, three in a
// row in about half (TestBurstsOfOutliers). The price of the minimum: a
// change is reported only once 5 results after it exist.
//
// Permutations is 199 and MaxPValue 0.01, as the ecp package's R = 199 with
// a stricter level: a history holds many series, and every false alarm
// costs an engineer's look, so a change must beat all but at most one of
// 199 shuffles. Otava's default of 0.001 belongs to its t-test; a
// permutation test can reach 0.001 only with 999 shuffles, five times the
// cost. A test stops shuffling as soon as its p-value can no longer reach
// MaxPValue, so the final, failing test of a detection is cheap.
//
// The shuffles come from a PCG generator seeded with Options.Seed and are
// drawn by this package, so a series and its options always give the same
// change points, on every machine and Go version.
package changepoint

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Defaults of the zero fields of Options; the package doc says why.
const (
	DefaultMinSegment   = 5
	DefaultPermutations = 199
	DefaultMaxPValue    = 0.01
)

// ErrNotFinite is returned, wrapped with the offending index, for a series
// holding a NaN or an infinity: a missing or broken result must be left out
// (or filled) by the caller, not scored.
var ErrNotFinite = errors.New("value is not a finite number")

// ErrTooShort is returned, wrapped, for a series too short to hold a change
// point: fewer than twice the minimum segment length. It means "not enough
// results yet", not "no change".
var ErrTooShort = errors.New("series is too short for a change point")

// ErrInvalidOptions is returned, wrapped with what is wrong, for options
// that cannot work.
var ErrInvalidOptions = errors.New("invalid change point options")

// Direction says which way of a metric is good, so that a change can be
// named a regression or an improvement.
type Direction int

const (
	// DirectionUnknown leaves every change Unclassified.
	DirectionUnknown Direction = iota
	// HigherIsBetter is for rates, such as throughput.
	HigherIsBetter
	// HigherIsWorse is for costs, such as latency or CPU per message.
	HigherIsWorse
)

// Effect is what a change point means for the metric, given its Direction.
// It follows the sign of the change's Shift alone: a change found in the
// spread, with a level that barely moved, is named by that small shift, so
// a caller deciding what to report weighs RelativeShift too.
type Effect int

const (
	// Unclassified is a change whose direction is unknown, or whose means
	// are equal (the spread changed, not the level).
	Unclassified Effect = iota
	// Regression is a change for the worse.
	Regression
	// Improvement is a change for the better.
	Improvement
)

// String returns "regression", "improvement" or "unclassified".
func (e Effect) String() string {
	switch e {
	case Regression:
		return "regression"
	case Improvement:
		return "improvement"
	default:
		return "unclassified"
	}
}

// Options tune a detection. The zero value is valid: each zero field takes
// its default.
type Options struct {
	// MinSegment is the fewest values a segment, and so each side of a
	// change point, may hold; at least 2. 0 means DefaultMinSegment.
	MinSegment int
	// Permutations is the number of shuffles of the significance test.
	// 0 means DefaultPermutations.
	Permutations int
	// MaxPValue is the significance level: the largest p-value of a change
	// point, in (0, 1). It must be at least 1/(Permutations+1), the
	// smallest p-value the test can give. 0 means DefaultMaxPValue.
	MaxPValue float64
	// Seed seeds the shuffles; 0 is a seed like any other.
	Seed uint64
	// Direction classifies each change as a regression or an improvement.
	Direction Direction
}

// withDefaults returns o with its zero fields set to their defaults, or an
// error wrapping ErrInvalidOptions.
func (o Options) withDefaults() (Options, error) {
	if o.MinSegment == 0 {
		o.MinSegment = DefaultMinSegment
	}
	if o.Permutations == 0 {
		o.Permutations = DefaultPermutations
	}
	if o.MaxPValue == 0 {
		o.MaxPValue = DefaultMaxPValue
	}
	switch {
	case o.MinSegment < 2:
		return o, fmt.Errorf("%w: MinSegment %d: a segment needs at least 2 values to have a spread", ErrInvalidOptions, o.MinSegment)
	case o.Permutations < 1:
		return o, fmt.Errorf("%w: Permutations %d: must be positive", ErrInvalidOptions, o.Permutations)
	case !(o.MaxPValue > 0 && o.MaxPValue < 1):
		return o, fmt.Errorf("%w: MaxPValue %v: must be in (0, 1)", ErrInvalidOptions, o.MaxPValue)
	case o.MaxPValue < 1/float64(o.Permutations+1):
		return o, fmt.Errorf("%w: MaxPValue %v is below 1/(Permutations+1) = %v, the smallest p-value %d permutations can give: raise Permutations to at least %d",
			ErrInvalidOptions, o.MaxPValue, 1/float64(o.Permutations+1), o.Permutations, int(math.Ceil(1/o.MaxPValue))-1)
	case o.Direction < DirectionUnknown || o.Direction > HigherIsWorse:
		return o, fmt.Errorf("%w: Direction %d is not a Direction", ErrInvalidOptions, o.Direction)
	}
	return o, nil
}

// Segment describes the values series[Start:End] between two change points
// (or a change point and an end of the series).
type Segment struct {
	// Start and End bound the segment: series[Start:End].
	Start, End int
	// Mean and Median are the segment's level.
	Mean, Median float64
	// StdDev is the sample standard deviation (0 for one value).
	StdDev float64
	// MAD is the median absolute deviation from the median: a spread that a
	// few outliers do not inflate (1.4826·MAD estimates the standard
	// deviation of normal noise).
	MAD float64
}

// ChangePoint is a significant change in a series.
type ChangePoint struct {
	// Index is the first value after the change: series[Index] is the first
	// result of the new level. MinSegment <= Index <= len(series)-MinSegment.
	Index int
	// Before and After are the segments on either side, up to the
	// neighbouring change points.
	Before, After Segment
	// Shift is After.Mean - Before.Mean.
	Shift float64
	// RelativeShift is Shift / |Before.Mean|: 0.05 is 5% up. It is 0 when
	// Before.Mean is 0, where no relative size exists.
	RelativeShift float64
	// PValue is the permutation test's p-value when the change point was
	// accepted; Confidence is 1 - PValue.
	PValue float64
	// Effect is a regression or an improvement for Options.Direction.
	Effect Effect
}

// Confidence is 1 - PValue: the share of shuffled series the change beat.
func (c ChangePoint) Confidence() float64 { return 1 - c.PValue }

// Detect returns the change points of series in increasing Index order, or
// none. The same series and options always give the same result. It
// returns an error wrapping ErrInvalidOptions, ErrNotFinite (a NaN or an
// infinity in series) or ErrTooShort (fewer than 2·MinSegment values).
// Detect does not modify series and is safe for concurrent use.
func Detect(series []float64, opts Options) ([]ChangePoint, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	for i, v := range series {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("series[%d] is %v: %w", i, v, ErrNotFinite)
		}
	}
	if len(series) < 2*opts.MinSegment {
		return nil, fmt.Errorf("%w: %d values, a change point needs at least %d (twice the minimum segment of %d)",
			ErrTooShort, len(series), 2*opts.MinSegment, opts.MinSegment)
	}

	z, exp := scaled(series)
	found := divide(z, opts)
	slices.SortFunc(found, func(a, b accepted) int { return a.index - b.index })

	bounds := make([]int, 0, len(found)+2)
	bounds = append(bounds, 0)
	for _, f := range found {
		bounds = append(bounds, f.index)
	}
	bounds = append(bounds, len(z))
	segs := make([]Segment, len(bounds)-1)
	for i := range segs {
		segs[i] = describe(z, bounds[i], bounds[i+1], exp)
	}
	cps := make([]ChangePoint, len(found))
	for i, f := range found {
		cps[i] = newChangePoint(f, segs[i], segs[i+1], opts.Direction)
	}
	return cps, nil
}

// newChangePoint sizes an accepted split from the segments on either side.
func newChangePoint(f accepted, before, after Segment, dir Direction) ChangePoint {
	c := ChangePoint{Index: f.index, Before: before, After: after, PValue: f.pvalue}
	c.Shift = after.Mean - before.Mean
	if before.Mean != 0 {
		c.RelativeShift = c.Shift / math.Abs(before.Mean)
	}
	switch {
	case c.Shift == 0 || dir == DirectionUnknown:
		c.Effect = Unclassified
	case (c.Shift > 0) == (dir == HigherIsWorse):
		c.Effect = Regression
	default:
		c.Effect = Improvement
	}
	return c
}

// scaled returns series divided by a power of two, 2^exp, that brings every
// value into [-1, 1]. Scaling by a power of two is exact, and leaves the
// split ranking unchanged (the energy statistic with alpha = 1 is
// proportional to scale); it keeps distances and their sums finite for any
// finite input.
func scaled(series []float64) (z []float64, exp int) {
	var maxAbs float64
	for _, v := range series {
		maxAbs = max(maxAbs, math.Abs(v))
	}
	if maxAbs > 0 {
		_, exp = math.Frexp(maxAbs)
	}
	z = make([]float64, len(series))
	for i, v := range series {
		z[i] = math.Ldexp(v, -exp)
	}
	return z, exp
}
