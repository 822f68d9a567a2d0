package changepoint

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// FuzzDetect checks that any series of floats (8 bytes each, at most 64)
// with any minimum segment gives change points or a documented error,
// never a panic: indices within the series, increasing, every segment at
// least MinSegment long and described by its own bounds, p-values within
// the level.
func FuzzDetect(f *testing.F) {
	f.Add(floats(1, 1, 1, 1, 1, 5, 5, 5, 5, 5), uint8(0))
	f.Add(floats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), uint8(1))
	f.Add(floats(1e308, -1e308, 1e308, -1e308, 1e308, -1e308, 0, 0, 0, 0, 0, 0), uint8(0))
	f.Add(floats(5e-324, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, math.NaN()), uint8(2))
	f.Add(floats(10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, minSeg uint8) {
		series := make([]float64, 0, 64)
		for len(raw) >= 8 && len(series) < cap(series) {
			series = append(series, math.Float64frombits(binary.LittleEndian.Uint64(raw)))
			raw = raw[8:]
		}
		opts := Options{MinSegment: 2 + int(minSeg%6), Permutations: 39, MaxPValue: 0.05}
		cps, err := Detect(series, opts)
		finite := true
		for _, v := range series {
			finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		switch {
		case !finite:
			if !errors.Is(err, ErrNotFinite) {
				t.Fatalf("non-finite series: err = %v, want ErrNotFinite", err)
			}
			return
		case len(series) < 2*opts.MinSegment:
			if !errors.Is(err, ErrTooShort) {
				t.Fatalf("%d values with MinSegment %d: err = %v, want ErrTooShort", len(series), opts.MinSegment, err)
			}
			return
		case err != nil:
			t.Fatalf("err = %v", err)
		}
		prev := 0
		for i, c := range cps {
			if c.Index-prev < opts.MinSegment || len(series)-c.Index < opts.MinSegment {
				t.Fatalf("change point %d at %d of %d values: a segment shorter than %d", i, c.Index, len(series), opts.MinSegment)
			}
			if c.Before.Start != prev || c.Before.End != c.Index || c.After.Start != c.Index {
				t.Fatalf("change point %d at %d: segments %+v, %+v do not meet at it after %d", i, c.Index, c.Before, c.After, prev)
			}
			if i > 0 && cps[i-1].After != c.Before {
				t.Fatalf("change point %d: Before %+v is not the previous After %+v", i, c.Before, cps[i-1].After)
			}
			if !(c.PValue > 0 && c.PValue <= opts.MaxPValue) {
				t.Fatalf("change point %d: p-value %v", i, c.PValue)
			}
			prev = c.Index
		}
		if n := len(cps); n > 0 && cps[n-1].After.End != len(series) {
			t.Fatalf("last segment ends at %d, want %d", cps[n-1].After.End, len(series))
		}
	})
}

// floats encodes vs as FuzzDetect reads them.
func floats(vs ...float64) []byte {
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}
