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
	agg := NewHDR()
	h.DrainInto(agg)
	s := Summarize(agg)
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
	again := NewHDR()
	h.DrainInto(again)
	if again.TotalCount() != 0 {
		t.Errorf("drain did not reset: %d left", again.TotalCount())
	}
}

func TestSubMillisecondKept(t *testing.T) {
	h := NewHistogram()
	h.RecordNanos(250_000) // 0.25 ms
	h.RecordNanos(400)     // below 1 µs: recorded as 0, not dropped
	agg := NewHDR()
	h.DrainInto(agg)
	if agg.TotalCount() != 2 {
		t.Fatalf("count %d, want 2", agg.TotalCount())
	}
	if s := Summarize(agg); s.Max != 0.25 {
		t.Errorf("max %v ms, want 0.25", s.Max)
	}
}

func TestClamp(t *testing.T) {
	h := NewHistogram()
	h.RecordNanos(-5)
	h.RecordNanos((HighestMicros + 10) * 1000)
	agg := NewHDR()
	h.DrainInto(agg)
	if agg.TotalCount() != 2 || h.Clamped() != 1 || agg.Min() != 0 {
		t.Errorf("count %d clamped %d min %d", agg.TotalCount(), h.Clamped(), agg.Min())
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
		enc := NewHDR()
		p.DrainInto(enc)
		s, err := Encode(enc)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(s)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(dec)
	}
	want := NewHDR()
	all.DrainInto(want)
	if !merged.Equals(want) {
		t.Fatalf("merged %v != direct %v", Summarize(merged), Summarize(want))
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
	total := NewHDR()
	for drained := false; !drained; {
		select {
		case <-done:
			drained = true
		default:
		}
		h.DrainInto(total)
	}
	h.DrainInto(total)
	if total.TotalCount() != n {
		t.Fatalf("drained %d values, recorded %d", total.TotalCount(), n)
	}
	if total.Max() < 4990 || total.Min() != 0 {
		t.Fatalf("drained range %d..%d µs, recorded 0..4999", total.Min(), total.Max())
	}
}
