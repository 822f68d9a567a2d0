package changepoint

import (
	"math"
	"slices"
)

// describe returns the statistics of z[start:end], a segment of the series
// divided by 2^exp, in the units of the series.
func describe(z []float64, start, end, exp int) Segment {
	vals := z[start:end]
	n := float64(len(vals))
	var mean float64
	for _, v := range vals {
		mean += v
	}
	mean /= n
	var ss float64
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	var sd float64
	if len(vals) > 1 {
		sd = math.Sqrt(ss / (n - 1))
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	med := median(sorted)
	for i, v := range sorted {
		sorted[i] = math.Abs(v - med)
	}
	slices.Sort(sorted)
	mad := median(sorted)
	return Segment{
		Start:  start,
		End:    end,
		Mean:   math.Ldexp(mean, exp),
		Median: math.Ldexp(med, exp),
		StdDev: math.Ldexp(sd, exp),
		MAD:    math.Ldexp(mad, exp),
	}
}

// median returns the median of sorted, which is not empty.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
