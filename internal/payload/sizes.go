package payload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Sizes is a distribution of message sizes, header included: weighted
// buckets, or a log-normal. The zero value is no distribution (every
// message has the workload's one size).
//
// A payload pool follows the distribution exactly, not by chance: payload
// i of a pool of n gets the size at quantile (i+0.5)/n, and the pool is
// then shuffled with the run's seed. A bucket of weight share w thus holds
// round(w*n) of the pool's payloads, and a producer that cycles through the
// pool sends sizes with the distribution's histogram.
type Sizes struct {
	// Buckets are weighted size ranges; sizes are uniform within one.
	Buckets []Bucket `json:"buckets,omitempty"`
	// LogNormal is a log-normal distribution clamped to a range.
	LogNormal *LogNormal `json:"logNormal,omitempty"`
}

// Bucket is a range of sizes, Min to Max bytes inclusive, drawn with a
// relative weight.
type Bucket struct {
	Min    int     `json:"min"`
	Max    int     `json:"max"`
	Weight float64 `json:"weight"`
}

// LogNormal is the distribution whose logarithm is normal: Median bytes,
// Sigma the standard deviation of the natural logarithm (0.5 spreads the
// middle half over about 0.7x to 1.4x the median), clamped to Min..Max.
type LogNormal struct {
	Median float64 `json:"median"`
	Sigma  float64 `json:"sigma"`
	Min    int     `json:"min"`
	Max    int     `json:"max"`
}

// IsZero reports whether s gives no distribution.
func (s Sizes) IsZero() bool { return len(s.Buckets) == 0 && s.LogNormal == nil }

// Validate returns an error saying what is wrong with s, or nil. It names
// the field as the workload file does ("buckets[2].max").
func (s Sizes) Validate() error {
	if len(s.Buckets) > 0 && s.LogNormal != nil {
		return errors.New("give either buckets or logNormal, not both")
	}
	var total float64
	for i, b := range s.Buckets {
		switch {
		case b.Min < HeaderSize:
			return fmt.Errorf("buckets[%d].min: %d is below the %d-byte brokerbench header: use at least %d", i, b.Min, HeaderSize, HeaderSize)
		case b.Max < b.Min:
			return fmt.Errorf("buckets[%d].max: %d is below its min %d", i, b.Max, b.Min)
		case !(b.Weight > 0) || math.IsInf(b.Weight, 0):
			return fmt.Errorf("buckets[%d].weight: must be a number above 0, got %v", i, b.Weight)
		}
		total += b.Weight
	}
	if math.IsInf(total, 0) {
		return errors.New("buckets: the weights add up to more than a number can hold")
	}
	if l := s.LogNormal; l != nil {
		switch {
		case !(l.Median >= HeaderSize) || math.IsInf(l.Median, 0):
			return fmt.Errorf("logNormal.median: must be a size of at least %d bytes, got %v", HeaderSize, l.Median)
		case !(l.Sigma > 0) || l.Sigma > 10:
			return fmt.Errorf("logNormal.sigma: must be above 0 and at most 10, got %v", l.Sigma)
		case l.Min < HeaderSize:
			return fmt.Errorf("logNormal.min: %d is below the %d-byte brokerbench header: use at least %d", l.Min, HeaderSize, HeaderSize)
		case l.Max < l.Min || float64(l.Max) < l.Median || float64(l.Min) > l.Median:
			return fmt.Errorf("logNormal: min %d, median %v and max %d must be in that order", l.Min, l.Median, l.Max)
		}
	}
	return nil
}

// Max is the largest size s can give (0 for no distribution).
func (s Sizes) Max() int {
	if s.LogNormal != nil {
		return s.LogNormal.Max
	}
	most := 0
	for _, b := range s.Buckets {
		most = max(most, b.Max)
	}
	return most
}

// Quantile returns the size at cumulative probability p (0 to 1) of a
// valid s.
func (s Sizes) Quantile(p float64) int {
	p = min(max(p, 0), 1)
	if l := s.LogNormal; l != nil {
		switch p {
		case 0:
			return l.Min
		case 1:
			return l.Max
		}
		v := l.Median * math.Exp(l.Sigma*math.Sqrt2*math.Erfinv(2*p-1))
		return min(max(int(math.Round(v)), l.Min), l.Max)
	}
	var total float64
	for _, b := range s.Buckets {
		total += b.Weight
	}
	at := p * total
	for i, b := range s.Buckets {
		if at > b.Weight && i < len(s.Buckets)-1 {
			at -= b.Weight
			continue
		}
		within := min(at/b.Weight, 1)
		return b.Min + min(int(within*float64(b.Max-b.Min+1)), b.Max-b.Min)
	}
	return 0
}

// Mean is the mean size of a pool of n payloads drawn from s.
func (s Sizes) Mean(n int) float64 {
	var sum float64
	for _, size := range s.pool(n) {
		sum += float64(size)
	}
	return sum / float64(n)
}

// pool returns the sizes of a pool of n payloads, in quantile order.
func (s Sizes) pool(n int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = s.Quantile((float64(i) + 0.5) / float64(n))
	}
	return sizes
}

// CheckPool returns an error when a pool of n payloads cannot represent
// s: a bucket whose weight share would give it no payload at all.
func (s Sizes) CheckPool(n int) error {
	var total float64
	for _, b := range s.Buckets {
		total += b.Weight
	}
	for i, b := range s.Buckets {
		if share := b.Weight / total; share*float64(n) < 0.5 {
			need := int(math.Ceil(0.5 / share))
			return fmt.Errorf("buckets[%d] (%d-%d bytes) has %.3g%% of the weight, so a pool of %d payloads holds none of it: raise the payload pool size to at least %d", i, b.Min, b.Max, share*100, n, need)
		}
	}
	return nil
}

// shuffledSizes returns the sizes of a pool of n payloads from s, in an
// order shuffled with seed.
func (s Sizes) shuffledSizes(n int, seed uint64) []int {
	sizes := s.pool(n)
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	rng.Shuffle(len(sizes), func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
	return sizes
}
