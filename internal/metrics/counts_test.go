package metrics

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCountsMatchHDR: Counts lays out its counts exactly as hdrhistogram-go
// does for the same geometry, for values across the whole range.
func TestCountsMatchHDR(t *testing.T) {
	lib := NewHDR()
	c := NewCounts()
	if got := len(lib.Export().Counts); got != countsLen {
		t.Fatalf("hdrhistogram-go has %d counts for the geometry, Counts %d", got, countsLen)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, 2047, 2048, 2049, 4095, 4096, 1_000_000, HighestMicros - 1, HighestMicros}
	for range 100_000 {
		values = append(values, int64(rng.Uint64N(uint64(HighestMicros)+1))>>rng.IntN(32))
	}
	for _, v := range values {
		c.Record(v)
		if err := lib.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(c.Histogram().Export().Counts, lib.Export().Counts) || !c.Histogram().Equals(lib) {
		t.Fatal("counts differ from hdrhistogram-go's")
	}
}

// TestCountsAddAndReset: adding keeps every count and the range, and a reset
// Counts is empty and reusable.
func TestCountsAddAndReset(t *testing.T) {
	a, b, sum := NewCounts(), NewCounts(), NewHDR()
	for _, v := range []int64{5, 70_000} {
		a.Record(v)
		_ = sum.RecordValue(v)
	}
	for _, v := range []int64{3, 2_000_000_000} {
		b.Record(v)
		_ = sum.RecordValue(v)
	}
	a.Add(b)
	a.Add(NewCounts())
	if a.Total() != 4 || !a.Histogram().Equals(sum) {
		t.Fatalf("sum %v, want %v", Summarize(a.Histogram()), Summarize(sum))
	}
	a.Reset()
	if a.Total() != 0 || a.Histogram().TotalCount() != 0 {
		t.Fatal("reset left counts")
	}
	a.Record(7)
	if h := a.Histogram(); h.TotalCount() != 1 || h.Max() != 7 {
		t.Fatalf("after reset: count %d max %d", h.TotalCount(), h.Max())
	}
}

// FuzzCountsIndex: every value in range has an index within the counts,
// and it is the one hdrhistogram-go uses.
func FuzzCountsIndex(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(2048))
	f.Add(HighestMicros)
	f.Fuzz(func(t *testing.T, v int64) {
		if v < 0 || v > HighestMicros {
			return
		}
		c, lib := NewCounts(), NewHDR()
		c.Record(v)
		_ = lib.RecordValue(v)
		if !c.Histogram().Equals(lib) {
			t.Fatalf("value %d counted at another index than hdrhistogram-go's", v)
		}
	})
}
