package changepoint

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// accepted is a split that passed the significance test.
type accepted struct {
	index  int
	pvalue float64
}

// segment is a stretch z[start:end) of the current segmentation, with its
// best split.
type segment struct {
	start, end int
	best       split
}

// split is a segment's best candidate: the τ with the largest q̂, or ok
// false when the segment is too short to split.
type split struct {
	tau int
	q   float64
	ok  bool
}

// divide runs hierarchical E-divisive on z: it accepts the best split over
// all segments while the permutation test finds it significant, and returns
// the accepted splits in the order they were found.
func divide(z []float64, opts Options) []accepted {
	w := newWorkspace(len(z))
	rng := newShuffler(opts.Seed)
	segs := []segment{{start: 0, end: len(z), best: w.bestSplit(z, opts.MinSegment)}}
	var found []accepted
	for {
		k := -1
		for i, s := range segs {
			if s.best.ok && (k < 0 || s.best.q > segs[k].best.q) {
				k = i
			}
		}
		if k < 0 || segs[k].best.q <= 0 {
			return found
		}
		p, significant := w.permutationTest(z, segs, segs[k].best.q, opts, rng)
		if !significant {
			return found
		}
		s := segs[k]
		tau := s.start + s.best.tau
		found = append(found, accepted{index: tau, pvalue: p})
		left := segment{start: s.start, end: tau, best: w.bestSplit(z[s.start:tau], opts.MinSegment)}
		right := segment{start: tau, end: s.end, best: w.bestSplit(z[tau:s.end], opts.MinSegment)}
		segs[k] = left
		segs = append(segs, right)
	}
}

// permutationTest estimates the p-value of an observed largest q̂ by
// shuffling the values within every segment and searching again. It stops
// as soon as the p-value can no longer be at most opts.MaxPValue; the
// p-value it then returns is a lower bound and significant is false.
func (w *workspace) permutationTest(z []float64, segs []segment, observed float64, opts Options, rng *shuffler) (pvalue float64, significant bool) {
	perm := w.perm[:len(z)]
	copy(perm, z)
	// A shuffle ties the observation when only rounding sets them apart
	// (segments of equal values); ties count against the change.
	threshold := observed * (1 - 1e-9)
	exceeded := 0
	total := float64(opts.Permutations + 1)
	for range opts.Permutations {
		var q float64
		for _, s := range segs {
			if !s.best.ok {
				continue
			}
			part := perm[s.start:s.end]
			rng.shuffle(part)
			if b := w.bestSplit(part, opts.MinSegment); b.q > q {
				q = b.q
			}
		}
		if q >= threshold {
			exceeded++
			if float64(exceeded+1)/total > opts.MaxPValue {
				return float64(exceeded+1) / total, false
			}
		}
	}
	return float64(exceeded+1) / total, true
}

// workspace holds the buffers of the searches of one detection, so that
// neither the splits nor the permutations allocate.
type workspace struct {
	below []float64 // below[j] = Σ_{i<j} |z[i]-z[j]|
	fromX []float64 // fromX[j] = Σ_{i<τ} |z[i]-z[j]|, for the current τ
	inv   []float64 // inv[i] = 1/i
	perm  []float64 // the shuffled series
}

// newWorkspace returns the buffers for a series of n values.
func newWorkspace(n int) *workspace {
	w := &workspace{
		below: make([]float64, n),
		fromX: make([]float64, n),
		inv:   make([]float64, n+1),
		perm:  make([]float64, n),
	}
	for i := 1; i <= n; i++ {
		w.inv[i] = 1 / float64(i)
	}
	return w
}

// bestSplit returns the split τ of seg (relative to seg) with the largest
//
//	q̂(τ, κ) = 2/(n+m) · (Sxy − m·Sxx/(n−1) − n·Syy/(m−1))
//
// over X = seg[:τ), Y = seg[τ:κ), n = τ, m = κ−τ, both at least minSeg,
// where Sxy sums |x−y| over pairs across the split and Sxx, Syy over
// pairs within each side. This is Matteson and James's nm/(n+m)·Ê with
// alpha = 1. Running sums make it O(len(seg)²) in time and O(len(seg)) in
// memory: growing X by one value adds that value's distances to every
// later value (fromX), and growing Y by one value j adds its distances to
// X (fromX[j]) and to the rest of Y (below[j]-fromX[j]).
func (w *workspace) bestSplit(seg []float64, minSeg int) split {
	l := len(seg)
	if l < 2*minSeg {
		return split{}
	}
	below, fromX, inv := w.below[:l], w.fromX[:l], w.inv
	for j, y := range seg {
		var sum float64
		for _, x := range seg[:j] {
			sum += math.Abs(x - y)
		}
		below[j] = sum
		fromX[j] = 0
	}
	best := split{ok: true, q: math.Inf(-1)}
	var sxx float64 // Σ over pairs within X = seg[:tau)
	for tau := 1; tau <= l-minSeg; tau++ {
		x := seg[tau-1]
		sxx += below[tau-1]
		if tau < minSeg {
			for j := tau; j < l; j++ {
				fromX[j] += math.Abs(seg[j] - x)
			}
			continue
		}
		// One pass grows X by x (fromX) and Y by seg[j], then scores
		// (tau, j+1) once Y holds minSeg values.
		n := float64(tau)
		sxxPer := sxx * inv[tau-1] // Sxx/(n−1)
		var sxy, syy float64
		firstScored := tau + minSeg - 1
		for j := tau; j < firstScored; j++ {
			fromX[j] += math.Abs(seg[j] - x)
			sxy += fromX[j]
			syy += below[j] - fromX[j]
		}
		for j := firstScored; j < l; j++ {
			fromX[j] += math.Abs(seg[j] - x)
			sxy += fromX[j]
			syy += below[j] - fromX[j]
			m := j - tau + 1
			q := 2 * inv[tau+m] * (sxy - float64(m)*sxxPer - n*syy*inv[m-1])
			if q > best.q {
				best.q, best.tau = q, tau
			}
		}
	}
	return best
}

// shuffler draws permutations from a PCG generator with its own bounded
// draws, so that a seed gives the same shuffles whatever the Go version
// (math/rand/v2 does not promise its Shuffle's sequence).
type shuffler struct {
	src *rand.PCG
}

// newShuffler returns a shuffler whose draws are fixed by seed.
func newShuffler(seed uint64) *shuffler {
	return &shuffler{src: rand.NewPCG(seed, 0x9e3779b97f4a7c15)}
}

// shuffle permutes s uniformly (Fisher-Yates).
func (r *shuffler) shuffle(s []float64) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.below(uint64(i) + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// below returns a uniform integer in [0, n), n > 0 (Lemire's
// multiply-and-reject).
func (r *shuffler) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.src.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(r.src.Uint64(), n)
		}
	}
	return hi
}
