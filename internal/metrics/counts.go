package metrics

import (
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The geometry of an HdrHistogram from 1 to HighestMicros with
// SignificantDigits digits, as hdrhistogram-go lays out its counts: values
// below 2048 have their own counts; above, each power-of-two bucket has 1024
// sub-buckets. TestCountsMatchHDR checks these against the library.
const (
	subBucketHalfCountMagnitude = 10
	subBucketHalfCount          = 1 << subBucketHalfCountMagnitude
	subBucketMask               = 2*subBucketHalfCount - 1
	bucketCount                 = 22
	countsLen                   = (bucketCount + 1) * subBucketHalfCount
)

// Counts is an HdrHistogram's counts in brokerbench's geometry, which
// remembers the range of counts touched since it was last cleared, so that
// adding one to another and clearing cost only that range. Merging
// hdrhistogram-go histograms walks every count up to the largest value and
// recomputes each one's value; with hundreds of clients, each with its own
// histograms, that walk was most of the collector's work (see
// BenchmarkDrainInto). Counts turns into an hdrhistogram-go Histogram for
// percentiles and encoding. A Counts is not safe for concurrent use.
type Counts struct {
	counts [countsLen]int64
	lo, hi int // counts outside [lo, hi] are zero; lo > hi when empty
	total  int64
}

// NewCounts returns empty Counts.
func NewCounts() *Counts {
	return &Counts{lo: countsLen, hi: -1}
}

// countsIndex returns the index of the count for v, 0 <= v <= HighestMicros.
func countsIndex(v int64) int {
	bucket := bits.Len64(uint64(v)|subBucketMask) - (subBucketHalfCountMagnitude + 1)
	sub := int(v >> bucket)
	return (bucket+1)<<subBucketHalfCountMagnitude + sub - subBucketHalfCount
}

// Record counts one value, in microseconds, 0 <= us <= HighestMicros.
func (c *Counts) Record(us int64) {
	i := countsIndex(us)
	c.counts[i]++
	c.total++
	if i < c.lo {
		c.lo = i
	}
	if i > c.hi {
		c.hi = i
	}
}

// Add adds o's counts to c.
func (c *Counts) Add(o *Counts) {
	if o.total == 0 {
		return
	}
	for i := o.lo; i <= o.hi; i++ {
		c.counts[i] += o.counts[i]
	}
	c.total += o.total
	c.lo, c.hi = min(c.lo, o.lo), max(c.hi, o.hi)
}

// Reset clears c.
func (c *Counts) Reset() {
	if c.lo <= c.hi {
		clear(c.counts[c.lo : c.hi+1])
	}
	c.lo, c.hi, c.total = countsLen, -1, 0
}

// Total returns how many values were counted.
func (c *Counts) Total() int64 { return c.total }

// Histogram returns the counts as an hdrhistogram-go Histogram.
func (c *Counts) Histogram() *hdrhistogram.Histogram {
	return hdrhistogram.Import(&hdrhistogram.Snapshot{
		LowestTrackableValue: 1, HighestTrackableValue: HighestMicros, SignificantFigures: SignificantDigits,
		Counts: c.counts[:], IntegerToDoubleConversionRatio: 1,
	})
}
