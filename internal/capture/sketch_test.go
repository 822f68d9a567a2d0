package capture

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/payload"
)

// zipfStream returns n keys drawn as a ZIPF workload draws them, and
// the true count of each key.
func zipfStream(t *testing.T, keys int, s float64, n int, seed uint64) ([][]byte, map[string]int64) {
	t.Helper()
	k, err := payload.NewKeys(payload.KeySpec{Mode: payload.ZipfKey, Count: keys, ZipfS: s}, seed)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, n)
	truth := map[string]int64{}
	for i := range out {
		out[i] = k.Next()
		truth[string(out[i])]++
	}
	return out, truth
}

// TestTopKBounds: every counter's count is at least the key's true count
// and at most its error above it; the heaviest keys, those above
// total/capacity, all have counters; with room for every key the counts
// are exact.
func TestTopKBounds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keys, size int
		exact      bool
	}{
		{"more keys than counters", 100_000, 1000, false},
		{"a counter for every key", 500, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, truth := zipfStream(t, tc.keys, 1.1, 200_000, 7)
			top := NewTopK(tc.size)
			byHash := map[uint64]string{}
			for _, key := range stream {
				h := testHash(key)
				byHash[h] = string(key)
				top.Add(h)
			}
			counts := top.Counts()
			tracked := map[string]bool{}
			for _, c := range counts {
				key := byHash[c.Hash]
				tracked[key] = true
				if c.Count < truth[key] || c.Count-c.Error > truth[key] {
					t.Fatalf("key %q: counted %d (error %d), true count %d", key, c.Count, c.Error, truth[key])
				}
				if tc.exact && (c.Count != truth[key] || c.Error != 0) {
					t.Fatalf("key %q: counted %d (error %d), want exactly %d", key, c.Count, c.Error, truth[key])
				}
			}
			for key, n := range truth {
				if n > int64(len(stream)/tc.size) && !tracked[key] {
					t.Errorf("key %q (%d times, above %d/%d) has no counter", key, n, len(stream), tc.size)
				}
			}
			if !sort.SliceIsSorted(counts, func(i, j int) bool { return counts[i].Count > counts[j].Count }) {
				t.Error("counts are not largest first")
			}
		})
	}
}

// testHash is a fixed hash of key for the sketches' tests.
func testHash(key []byte) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for _, b := range key {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}

// TestFitZipf: the exponent fitted to seeded Zipf samples, through a
// space-saving sketch as a capture sees them, is within 0.05 of the
// one drawn with. Uniform keys look uniform; slightly skewed ones do not.
func TestFitZipf(t *testing.T) {
	for _, tc := range []struct {
		keys int
		s    float64
	}{
		{200, 0.6}, {200, 1.0}, {1000, 1.2}, {50_000, 0.9}, {50_000, 1.5}, {1_000_000, 1.1},
	} {
		stream, truth := zipfStream(t, tc.keys, tc.s, 300_000, 3)
		top := NewTopK(topKCapacity)
		for _, key := range stream {
			top.Add(testHash(key))
		}
		counts := top.Counts()
		if top.Saturated() {
			counts = counts[:len(counts)/2]
		}
		ranked := make([]int64, len(counts))
		for i, c := range counts {
			ranked[i] = c.Count
		}
		// The distinct keys a capture would count: those drawn at all.
		got := FitZipf(ranked, int64(len(stream)), len(truth))
		if math.Abs(got-tc.s) > 0.05 {
			t.Errorf("%d keys, exponent %.2f: fitted %.3f", tc.keys, tc.s, got)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int64, 1000)
	for range 200_000 {
		counts[rng.IntN(len(counts))]++
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i] > counts[j] })
	if !LooksUniform(counts) {
		t.Error("uniform keys do not look uniform")
	}
	if _, skewed := zipfStream(t, 1000, 0.2, 200_000, 5); LooksUniform(mapCounts(skewed)) {
		t.Error("keys of Zipf exponent 0.2 look uniform")
	}
	if got := FitZipf(nil, 0, 0); got != 0 {
		t.Errorf("no keys fitted %v, want 0", got)
	}
}

// TestHarmonic: the Euler-Maclaurin tail agrees with the direct sum.
func TestHarmonic(t *testing.T) {
	for _, s := range []float64{0.3, 1, 1.7} {
		var want float64
		for r := 1; r <= 200_000; r++ {
			want += math.Pow(float64(r), -s)
		}
		if got := harmonic(200_000, s); math.Abs(got-want) > 1e-9*want {
			t.Errorf("H(200000, %v) = %v, want %v", s, got, want)
		}
	}
}

// mapCounts returns the counts of truth.
func mapCounts(truth map[string]int64) []int64 {
	var out []int64
	for _, n := range truth {
		out = append(out, n)
	}
	return out
}

// TestDistinctKeysBeyondTheCounters: past the space-saving sketch's
// counters, the count of distinct keys is the HyperLogLog estimate,
// within 3% of the truth.
func TestDistinctKeysBeyondTheCounters(t *testing.T) {
	o := NewObserver(1)
	rng := rand.New(rand.NewPCG(5, 6))
	truth := map[uint32]bool{}
	key := make([]byte, 4)
	at := time.Unix(1_700_000_000, 0)
	for range 300_000 {
		k := rng.Uint32N(100_000)
		truth[k] = true
		key[0], key[1], key[2], key[3] = byte(k), byte(k>>8), byte(k>>16), byte(k>>24)
		o.Observe(Record{Key: key, Value: key, Time: at, Codec: "none"})
	}
	got := o.Shape("many", at, at.Add(time.Second), false).Keys
	if math.Abs(float64(got.Distinct)-float64(len(truth))) > 0.03*float64(len(truth)) || got.Uniform {
		t.Errorf("%d distinct keys (uniform %v), truly %d", got.Distinct, got.Uniform, len(truth))
	}
}
