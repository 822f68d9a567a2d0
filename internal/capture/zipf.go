package capture

import "math"

// Bounds of a fitted Zipf exponent: those a workload's keyZipfExponent
// accepts.
const (
	minZipfExponent = 0.001
	maxZipfExponent = 10.0
)

// FitZipf returns the exponent s of the Zipf distribution over n keys
// (the key of rank r drawn with probability r^-s / H(n,s)) that makes
// the observed counts most likely. counts are the counts of the most
// frequent keys, largest first, ranks 1 to len(counts); total is the
// count of every keyed message, the keys beyond len(counts) lumped
// together (a censored multinomial likelihood, maximised by golden-section
// search). It returns 0 when there is nothing to fit: no counts, or a
// single key.
func FitZipf(counts []int64, total int64, n int) float64 {
	n = max(n, len(counts))
	if len(counts) == 0 || n < 2 || total <= 0 {
		return 0
	}
	var tracked int64
	for _, c := range counts {
		tracked += c
	}
	rest := max(total-tracked, 0)
	logLikelihood := func(s float64) float64 {
		h := harmonic(n, s)
		var ll, mass float64
		for i, c := range counts {
			p := math.Pow(float64(i+1), -s) / h
			mass += p
			ll += float64(c) * math.Log(p)
		}
		if rest > 0 && len(counts) < n {
			ll += float64(rest) * math.Log(max(1-mass, 1e-300))
		}
		return ll
	}
	lo, hi := minZipfExponent, maxZipfExponent
	golden := (math.Sqrt(5) - 1) / 2
	a, b := hi-golden*(hi-lo), lo+golden*(hi-lo)
	fa, fb := logLikelihood(a), logLikelihood(b)
	for hi-lo > 1e-4 {
		if fa < fb {
			lo, a, fa = a, b, fb
			b = lo + golden*(hi-lo)
			fb = logLikelihood(b)
		} else {
			hi, b, fb = b, a, fa
			a = hi - golden*(hi-lo)
			fa = logLikelihood(a)
		}
	}
	return (lo + hi) / 2
}

// harmonic returns the generalised harmonic number H(n,s), the sum of
// r^-s for r from 1 to n: the first terms summed, the tail by the
// Euler-Maclaurin formula, exact to far better than a fit needs.
func harmonic(n int, s float64) float64 {
	const direct = 1000
	var h float64
	for r := 1; r <= min(n, direct); r++ {
		h += math.Pow(float64(r), -s)
	}
	if n <= direct {
		return h
	}
	f := func(x float64) float64 { return math.Pow(x, -s) }
	df := func(x float64) float64 { return -s * math.Pow(x, -s-1) }
	a, b := float64(direct), float64(n)
	var integral float64
	if s == 1 {
		integral = math.Log(b / a)
	} else {
		integral = (math.Pow(b, 1-s) - math.Pow(a, 1-s)) / (1 - s)
	}
	// The sum from a to b by Euler-Maclaurin, less f(a), counted above.
	return h + integral + (f(b)-f(a))/2 + (df(b)-df(a))/12
}

// LooksUniform reports whether counts, those of every key seen, are
// what keys drawn uniformly would give: Pearson's chi-square statistic
// below its mean plus three standard deviations (df + 3·sqrt(2·df)).
// Sorted by count, uniform keys still fit a small Zipf exponent, since
// sorting orders their noise; this test does not.
func LooksUniform(counts []int64) bool {
	if len(counts) < 2 {
		return true
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	expected := float64(total) / float64(len(counts))
	var chi2 float64
	for _, c := range counts {
		d := float64(c) - expected
		chi2 += d * d / expected
	}
	df := float64(len(counts) - 1)
	return chi2 < df+3*math.Sqrt(2*df)
}
