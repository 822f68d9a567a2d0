package capture

import "math"

// binsPerDoubling is how finely sizeHistogram divides sizes: 8 bins per
// doubling, each about 9% wide.
const binsPerDoubling = 8

// sizeHistogram counts message sizes in logarithmic bins, keeping the
// smallest and largest size seen in each. It is not safe for concurrent
// use.
type sizeHistogram struct {
	bins []SizeBucket
}

// SizeBucket is one bin of sizes: Count messages from Min to Max bytes,
// the smallest and largest seen.
type SizeBucket struct {
	Min   int   `json:"min"`
	Max   int   `json:"max"`
	Count int64 `json:"count"`
}

// add counts one message of size bytes (at least 0).
func (h *sizeHistogram) add(size int) {
	size = max(size, 0)
	i := int(binsPerDoubling * math.Log2(float64(size)+1))
	for len(h.bins) <= i {
		h.bins = append(h.bins, SizeBucket{})
	}
	b := &h.bins[i]
	if b.Count == 0 || size < b.Min {
		b.Min = size
	}
	b.Max = max(b.Max, size)
	b.Count++
}

// buckets returns the bins that counted a message, smallest sizes first.
func (h *sizeHistogram) buckets() []SizeBucket {
	var out []SizeBucket
	for _, b := range h.bins {
		if b.Count > 0 {
			out = append(out, b)
		}
	}
	return out
}

// quantile returns the size at cumulative share p (0 to 1) of buckets,
// linear within a bucket's range.
func quantile(buckets []SizeBucket, p float64) int {
	var total int64
	for _, b := range buckets {
		total += b.Count
	}
	at := p * float64(total)
	for i, b := range buckets {
		if at > float64(b.Count) && i < len(buckets)-1 {
			at -= float64(b.Count)
			continue
		}
		within := min(at/float64(b.Count), 1)
		return b.Min + int(math.Round(within*float64(b.Max-b.Min)))
	}
	return 0
}
