package metrics

import (
	"math"
	"sync"
	"testing"
)

func TestRecordAndSummarize(t *testing.T) {
	h := NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		h.RecordNanos(i * 1000) // 1..1000 µs
	}
	agg := NewCounts()
	drain(h, agg)
	s := Summarize(agg.Histogram())
	if s.Count != 1000 {
		t.Fatalf("count %d", s.Count)
	}
	// Three significant digits: within 0.1%.
	check := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.001+0.001 {
			t.Errorf("%s = %v ms, want %v", name, got, want)
		}
	}
	check("p50", s.P50, 0.5)
	check("p99", s.P99, 0.99)
	check("max", s.Max, 1.0)
	check("mean", s.Mean, 0.5005)
	// The drain reset the source.
	again := NewCounts()
	drain(h, again)
	if again.Total() != 0 {
		t.Errorf("drain did not reset: %d left", again.Total())
	}
}

func TestSubMillisecondKept(t *testing.T) {
	h := NewHistogram()
	h.RecordNanos(250_000) // 0.25 ms
	h.RecordNanos(400)     // below 1 µs: recorded as 0, not dropped
	agg := NewCounts()
	drain(h, agg)
	if agg.Total() != 2 {
		t.Fatalf("count %d, want 2", agg.Total())
	}
	if s := Summarize(agg.Histogram()); s.Max != 0.25 {
		t.Errorf("max %v ms, want 0.25", s.Max)
	}
}

func TestClamp(t *testing.T) {
	h := NewHistogram()
	h.RecordNanos(-5)
	h.RecordNanos((HighestMicros + 10) * 1000)
	agg := NewCounts()
	drain(h, agg)
	if ah := agg.Histogram(); ah.TotalCount() != 2 || h.Clamped(0) != 1 || ah.Min() != 0 {
		t.Errorf("count %d clamped %d min %d", agg.Total(), h.Clamped(0), agg.Histogram().Min())
	}
}

// TestMergeIsExact checks that merging per-goroutine histograms, and
// encoding and decoding them, loses nothing: the basis of combining results
// from several workers.
func TestMergeIsExact(t *testing.T) {
	all := NewHistogram()
	parts := []*Histogram{NewHistogram(), NewHistogram(), NewHistogram()}
	var wg sync.WaitGroup
	for k, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < 10000; i++ {
				v := (i*7919 + int64(k)*104729) % 5_000_000 * 1000
				p.RecordNanos(v)
			}
		}()
		for i := int64(0); i < 10000; i++ {
			all.RecordNanos((i*7919 + int64(k)*104729) % 5_000_000 * 1000)
		}
	}
	wg.Wait()
	merged := NewHDR()
	for _, p := range parts {
		enc := NewCounts()
		drain(p, enc)
		s, err := Encode(enc.Histogram())
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(s)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(dec)
	}
	want := NewCounts()
	drain(all, want)
	if !merged.Equals(want.Histogram()) {
		t.Fatalf("merged %v != direct %v", Summarize(merged), Summarize(want.Histogram()))
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	if _, err := Decode("not a histogram"); err == nil {
		t.Error("decoded garbage")
	}
}

func BenchmarkRecordNanos(b *testing.B) {
	b.ReportAllocs()
	h := NewHistogram()
	for i := int64(0); b.Loop(); i++ {
		h.RecordNanos(i % 50_000_000)
	}
}

// TestDrainWhileRecording drains concurrently with a writer: every value is
// drained exactly once, none lost in a swap.
func TestDrainWhileRecording(t *testing.T) {
	h := NewHistogram()
	const n = 200_000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			h.RecordNanos(int64(i%5000) * 1000)
		}
	}()
	total := NewCounts()
	for drained := false; !drained; {
		select {
		case <-done:
			drained = true
		default:
		}
		drain(h, total)
	}
	drain(h, total)
	th := total.Histogram()
	if th.TotalCount() != n {
		t.Fatalf("drained %d values, recorded %d", th.TotalCount(), n)
	}
	if th.Max() < 4990 || th.Min() != 0 {
		t.Fatalf("drained range %d..%d µs, recorded 0..4999", th.Min(), th.Max())
	}
}

// BenchmarkDrainInto measures the collector's cost per recording client and
// interval: one drain of a histogram holding an interval's latencies (1,000
// values from 1 ms to 5 s, as under overload) into the interval histogram.
// Its peer, measured in the same run, is the merge of hdrhistogram-go
// histograms that the collector used before (hdr-merge); compare ns/op.
func BenchmarkDrainInto(b *testing.B) {
	b.Run("counts", func(b *testing.B) {
		h := NewHistogram()
		dst := NewCounts()
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			dst.Reset()
			for i := range int64(1000) {
				h.RecordNanos((1 + i*5) * 1_000_000)
			}
			b.StartTimer()
			drain(h, dst)
		}
	})
	b.Run("hdr-merge", func(b *testing.B) {
		src, dst := NewHDR(), NewHDR()
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			dst.Reset()
			for i := range int64(1000) {
				_ = src.RecordValue((1 + i*5) * 1000)
			}
			b.StartTimer()
			dst.Merge(src)
			src.Reset()
		}
	})
}

// TestCutSplitsStretches: a value recorded after Cut belongs to the next
// stretch even if it is recorded before the fold, and a second Cut before
// a fold loses nothing.
func TestCutSplitsStretches(t *testing.T) {
	h := NewHistogram()
	h.RecordNanos(1_000_000)
	h.Cut()
	h.RecordNanos(2_000_000)
	h.Cut() // no fold since the last cut: must keep both stretches apart
	h.RecordNanos(3_000_000)
	first := NewCounts()
	h.FoldInto(first)
	if fh := first.Histogram(); fh.TotalCount() != 1 || !fh.ValuesAreEquivalent(fh.Max(), 1000) {
		t.Fatalf("first stretch: count %d max %d µs, want 1 value of 1000 µs", fh.TotalCount(), fh.Max())
	}
	rest := NewCounts()
	h.FoldInto(rest) // no cut since the fold: nothing
	if rest.Total() != 0 {
		t.Fatalf("fold without a cut added %d values", rest.Total())
	}
	drain(h, rest)
	if rh := rest.Histogram(); rh.TotalCount() != 2 || !rh.ValuesAreEquivalent(rh.Min(), 2000) || !rh.ValuesAreEquivalent(rh.Max(), 3000) {
		t.Fatalf("second stretch: count %d min %d max %d, want 2000 and 3000 µs", rh.TotalCount(), rh.Min(), rh.Max())
	}
}

// drain adds everything h recorded since the last drain to dst (one per
// lane): a Cut and a FoldInto, as the collector does.
func drain(h *Histogram, dst ...*Counts) {
	h.Cut()
	h.FoldInto(dst...)
}

// TestRecordPair: a pair is recorded in two lanes, each folded into its own
// destination, and each lane counts its own clamped values.
func TestRecordPair(t *testing.T) {
	h := NewLanes(2)
	h.RecordPair(5_000_000, 2_000_000)
	h.RecordPair((HighestMicros+1)*1000, 1_000_000)
	pub, svc := NewCounts(), NewCounts()
	drain(h, pub, svc)
	if pub.Total() != 2 || svc.Total() != 2 || h.Clamped(0) != 1 || h.Clamped(1) != 0 {
		t.Fatalf("lanes %d and %d values, clamped %d and %d", pub.Total(), svc.Total(), h.Clamped(0), h.Clamped(1))
	}
	if ph, sh := pub.Histogram(), svc.Histogram(); !ph.ValuesAreEquivalent(ph.Min(), 5000) || !sh.ValuesAreEquivalent(sh.Max(), 2000) {
		t.Errorf("lane 0 min %d µs, lane 1 max %d µs: want 5000 and 2000", ph.Min(), sh.Max())
	}
}
