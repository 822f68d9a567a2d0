package payload

import (
	"math"
	"strings"
	"testing"
)

// TestBucketsPoolMatchesWeights: a pool holds each bucket's share of the
// weight exactly (to the payload), with sizes inside the bucket's range.
func TestBucketsPoolMatchesWeights(t *testing.T) {
	s := Sizes{Buckets: []Bucket{{Min: 100, Max: 200, Weight: 70}, {Min: 1000, Max: 1000, Weight: 20}, {Min: 5000, Max: 9000, Weight: 10}}}
	generated, err := Generate(Spec{Sizes: s, PoolSize: 1000, Seed: 3})
	pool := generated.Payloads
	if err != nil {
		t.Fatal(err)
	}
	var counts [3]int
	for _, p := range pool {
		switch n := len(p); {
		case n >= 100 && n <= 200:
			counts[0]++
		case n == 1000:
			counts[1]++
		case n >= 5000 && n <= 9000:
			counts[2]++
		default:
			t.Fatalf("size %d is in no bucket", n)
		}
	}
	if counts != [3]int{700, 200, 100} {
		t.Errorf("bucket counts %v, want [700 200 100]", counts)
	}
	if pool[0] == nil || len(pool[0]) == len(pool[1]) && len(pool[1]) == len(pool[2]) && len(pool[2]) == len(pool[3]) {
		t.Error("the pool is not shuffled: its first sizes are equal")
	}
}

// TestLogNormalQuantiles: the pool's median is the distribution's, and
// its spread follows sigma; the clamp holds.
func TestLogNormalQuantiles(t *testing.T) {
	s := Sizes{LogNormal: &LogNormal{Median: 1000, Sigma: 0.5, Min: 100, Max: 20000}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := s.Quantile(0.5); got != 1000 {
		t.Errorf("median %d, want 1000", got)
	}
	// The 84th percentile of a log-normal is median*e^sigma.
	if got, want := float64(s.Quantile(0.8413)), 1000*math.Exp(0.5); math.Abs(got-want) > 5 {
		t.Errorf("84th percentile %v, want %.0f", got, want)
	}
	if s.Quantile(0) != 100 || s.Quantile(1) != 20000 {
		t.Errorf("the clamp does not hold: %d, %d", s.Quantile(0), s.Quantile(1))
	}
	if mean := s.Mean(1000); mean < 1100 || mean > 1150 { // e^(sigma^2/2) = 1.133
		t.Errorf("mean %.0f, want about 1133", mean)
	}
}

// TestSizesRejected: each wrong distribution is refused with the field
// named.
func TestSizesRejected(t *testing.T) {
	for _, c := range []struct {
		s    Sizes
		want string
	}{
		{Sizes{Buckets: []Bucket{{Min: 10, Max: 100, Weight: 1}}}, "buckets[0].min"},
		{Sizes{Buckets: []Bucket{{Min: 100, Max: 50, Weight: 1}}}, "buckets[0].max"},
		{Sizes{Buckets: []Bucket{{Min: 100, Max: 100, Weight: 1}, {Min: 100, Max: 200, Weight: 0}}}, "buckets[1].weight"},
		{Sizes{Buckets: []Bucket{{Min: 100, Max: 100, Weight: math.NaN()}}}, "buckets[0].weight"},
		{Sizes{LogNormal: &LogNormal{Median: 10, Sigma: 1, Min: 22, Max: 100}}, "logNormal.median"},
		{Sizes{LogNormal: &LogNormal{Median: 100, Sigma: 0, Min: 22, Max: 1000}}, "logNormal.sigma"},
		{Sizes{LogNormal: &LogNormal{Median: 100, Sigma: 1, Min: 200, Max: 1000}}, "must be in that order"},
		{Sizes{Buckets: []Bucket{{Min: 100, Max: 100, Weight: 1}}, LogNormal: &LogNormal{Median: 100, Sigma: 1, Min: 22, Max: 1000}}, "not both"},
	} {
		if err := c.s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %q", c.s, err, c.want)
		}
	}
}

// TestPoolTooSmallForABucket: a bucket too light for the pool to hold is
// an error that says how large a pool would hold it.
func TestPoolTooSmallForABucket(t *testing.T) {
	s := Sizes{Buckets: []Bucket{{Min: 100, Max: 100, Weight: 999}, {Min: 50000, Max: 50000, Weight: 1}}}
	_, err := Generate(Spec{Sizes: s, PoolSize: 100})
	if err == nil || !strings.Contains(err.Error(), "at least 500") {
		t.Fatalf("err = %v, want the pool size that holds the bucket", err)
	}
	if _, err := Generate(Spec{Sizes: s, PoolSize: 500}); err != nil {
		t.Fatal(err)
	}
}

// TestCompressibilityReached: for every codec, pools of several sizes
// compress to the target ratio within the tolerance, as measured again
// from the outside.
func TestCompressibilityReached(t *testing.T) {
	for _, codec := range Codecs() {
		for _, target := range []float64{0.3, 0.6, 0.9} {
			for _, size := range []int{1024, 10240} {
				p, err := Generate(Spec{Size: size, PoolSize: 65536 / size, Seed: 5, Compress: &Compressibility{Codec: codec, Ratio: target}})
				if err != nil {
					t.Fatalf("%s %.1f at %d B: %v", codec, target, size, err)
				}
				again, err := Ratio(p.Payloads, codec)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(again-target) > ratioTolerance || math.Abs(p.Ratio-again) > 1e-9 {
					t.Errorf("%s %.1f at %d B: measured %.3f, reported %.3f", codec, target, size, again, p.Ratio)
				}
			}
		}
	}
}

// TestCompressibilityUnreachable: a ratio no payload of the size can reach
// is refused with the range that can be reached.
func TestCompressibilityUnreachable(t *testing.T) {
	_, err := Generate(Spec{Size: 40, PoolSize: 10, Compress: &Compressibility{Codec: "zstd", Ratio: 0.05}})
	if err == nil || !strings.Contains(err.Error(), "reachable") {
		t.Fatalf("err = %v, want the reachable range", err)
	}
	_, err = Generate(Spec{Size: 1000, PoolSize: 10, Compress: &Compressibility{Codec: "brotli", Ratio: 0.5}})
	if err == nil || !strings.Contains(err.Error(), "gzip, lz4, snappy, zstd") {
		t.Fatalf("err = %v, want the codecs named", err)
	}
}

// TestRandomPayloadsDoNotCompress: the default payloads are the
// incompressible end the target exists to move away from.
func TestRandomPayloadsDoNotCompress(t *testing.T) {
	generated, err := Generate(Spec{Size: 1024, RandomRatio: 1, PoolSize: 32, Seed: 1})
	pool := generated.Payloads
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range Codecs() {
		if r, err := Ratio(pool, codec); err != nil || r < 0.97 {
			t.Errorf("%s: random payloads compressed to %.3f (%v)", codec, r, err)
		}
	}
}

// TestZipfKeysFollowTheLaw: the hottest key's share is 1/H(N,s), the keys
// are distinct, and every producer shares them.
func TestZipfKeysFollowTheLaw(t *testing.T) {
	spec := KeySpec{Mode: ZipfKey, Count: 1000, ZipfS: 1}
	a, err := NewKeys(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewKeys(spec, 2)
	seen := map[string]int{}
	const draws = 200_000
	for range draws {
		seen[string(a.Next())]++
	}
	var h float64
	for r := 1; r <= 1000; r++ {
		h += 1 / float64(r)
	}
	for rank := 1; rank <= 10; rank *= 10 { // 0.134 and 0.0134 of the draws
		key := string(a.set.key(rank - 1))
		if share, want := float64(seen[key])/draws, 1/h/float64(rank); math.Abs(share-want) > want/10 {
			t.Errorf("rank %d key's share %.4f, want %.4f", rank, share, want)
		}
	}
	if a.set != b.set {
		t.Error("two producers do not share the key set")
	}
	distinct := map[string]bool{}
	for i := range 1000 {
		distinct[string(a.set.key(i))] = true
	}
	if len(distinct) != 1000 {
		t.Errorf("%d distinct keys of 1000", len(distinct))
	}
}

// TestKeyModes: round robin cycles through Count keys; uniform uses them
// all; no key gives nil; bad specs are refused.
func TestKeyModes(t *testing.T) {
	rr, err := NewKeys(KeySpec{Mode: RoundRobin, Count: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := string(rr.Next())
	rr.Next()
	rr.Next()
	if got := string(rr.Next()); got != first {
		t.Errorf("round robin over 3 keys gave %q fourth, want %q again", got, first)
	}
	u, _ := NewKeys(KeySpec{Mode: RandomKey, Count: 50}, 1)
	seen := map[string]bool{}
	for range 5000 {
		seen[string(u.Next())] = true
	}
	if len(seen) != 50 {
		t.Errorf("uniform over 50 keys used %d", len(seen))
	}
	if k, _ := NewKeys(KeySpec{Mode: NoKey}, 1); k.Next() != nil {
		t.Error("NO_KEY gave a key")
	}
	for _, bad := range []KeySpec{{Mode: "HASH"}, {Mode: ZipfKey}, {Mode: RandomKey, Count: MaxKeyCount + 1}} {
		if _, err := NewKeys(bad, 1); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// BenchmarkZipfKey: choosing a Zipf key allocates nothing.
func BenchmarkZipfKey(b *testing.B) {
	k, err := NewKeys(KeySpec{Mode: ZipfKey, Count: MaxKeyCount, ZipfS: 1.1}, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Next()
	}
}

// FuzzSizes: any distribution either is refused or gives a pool whose
// sizes lie in its range.
func FuzzSizes(f *testing.F) {
	f.Add(100, 200, 1.0, 1000.0, 0.5, 50, false)
	f.Add(22, 22, 0.001, 22.0, 9.0, 1, true)
	f.Fuzz(func(t *testing.T, lo, hi int, weight, median, sigma float64, pool int, logNormal bool) {
		if hi > 1<<16 || pool < 1 || pool > 200 {
			return
		}
		s := Sizes{Buckets: []Bucket{{Min: lo, Max: hi, Weight: weight}, {Min: lo, Max: lo, Weight: 1}}}
		if logNormal {
			s = Sizes{LogNormal: &LogNormal{Median: median, Sigma: sigma, Min: lo, Max: hi}}
		}
		generated, err := Generate(Spec{Sizes: s, PoolSize: pool})
		got := generated.Payloads
		if err != nil {
			return
		}
		for _, p := range got {
			if len(p) < lo || len(p) > hi || len(p) < HeaderSize {
				t.Fatalf("size %d outside %d-%d", len(p), lo, hi)
			}
		}
	})
}
