package metrics

import (
	"math/rand/v2"
	"testing"
)

// checkEncodes fails unless c.Encode decodes, with hdrhistogram-go's
// Decode, to exactly the histogram of c.
func checkEncodes(t *testing.T, c *Counts) {
	t.Helper()
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Decode(enc)
	if err != nil {
		t.Fatalf("hdrhistogram-go cannot decode it: %v", err)
	}
	if want := c.Histogram(); !h.Equals(want) || h.TotalCount() != c.Total() {
		t.Fatalf("decoded %d values, max %d; encoded %d, max %d", h.TotalCount(), h.Max(), want.TotalCount(), want.Max())
	}
}

// TestCountsEncode: what Counts.Encode writes decodes to the same
// histogram, for empty counts, a value at either end of the range, runs
// of zero counts long and short, and counts above one byte's worth; and
// it stays so when the compressor is reused.
func TestCountsEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, values := range [][]int64{
		nil,
		{0},
		{1},
		{HighestMicros},
		{0, HighestMicros},
		{5, 6, 8},
		{2047, 2048, 2049, 1_000_000},
	} {
		c := NewCounts()
		for _, v := range values {
			c.Record(v)
		}
		checkEncodes(t, c)
	}
	c := NewCounts()
	for range 200_000 {
		c.Record(int64(rng.Uint64N(uint64(HighestMicros)+1)) >> rng.IntN(32))
	}
	for range 3 {
		c.Record(700) // one count of several hundred thousand values
	}
	checkEncodes(t, c)
}

// FuzzCountsEncode: any set of values encodes to a histogram that
// decodes to the same one.
func FuzzCountsEncode(f *testing.F) {
	f.Add([]byte{0, 1, 2, 250})
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := NewCounts()
		for i := 0; i+4 <= len(b); i += 4 {
			v := int64(b[i])<<24 | int64(b[i+1])<<16 | int64(b[i+2])<<8 | int64(b[i+3])
			c.Record(min(v*int64(b[i]%8+1), HighestMicros))
		}
		checkEncodes(t, c)
	})
}

// BenchmarkEncode: an interval's histogram, encoded by Counts.Encode and
// by hdrhistogram-go's Encode of the same counts.
func BenchmarkEncode(b *testing.B) {
	c := NewCounts()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		c.Record(500 + int64(rng.NormFloat64()*100+rng.ExpFloat64()*300))
	}
	b.Run("counts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hdrhistogram-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(c.Histogram()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
