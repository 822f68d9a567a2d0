// Package metrics records latencies and counts while a run is in progress and
// turns them into per-interval and whole-run statistics.
//
// Latencies are recorded in HdrHistograms with microsecond resolution, from
// 1 µs to one hour with three significant digits; values below 1 µs are
// recorded as 0 µs and kept, values above the range are recorded at the top
// of the range and counted as clamped. Each recording goroutine owns its own
// Histogram; a collector drains them into interval histograms.
package metrics

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// HighestMicros is the largest latency a histogram tracks: one hour.
	HighestMicros = int64(3_600_000_000)
	// SignificantDigits is the histogram precision.
	SignificantDigits = 3
)

// NewHDR returns an empty histogram with brokerbench's geometry.
func NewHDR() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, HighestMicros, SignificantDigits)
}

// Histogram is a latency histogram written by one writer at a time (one
// goroutine, or callbacks that never run concurrently) and drained by a
// collector. It has one or more lanes: distributions recorded together,
// such as an acknowledgement's publish latency and service time, which
// RecordPair writes under one guard. Recording takes no lock: it marks
// itself in progress with an atomic sequence number around the write. A
// collector drains in two steps: Cut swaps in spare counts, which takes a
// few nanoseconds, so that many histograms can be cut at one instant;
// FoldInto later adds what was cut to destinations, waiting only for a
// write still in progress on it.
type Histogram struct {
	seq     atomic.Uint64 // odd while a value is being recorded
	active  atomic.Pointer[stretch]
	drainMu sync.Mutex
	spare   *stretch // guarded by drainMu; nil between Cut and FoldInto
	cut     *stretch // guarded by drainMu
	cutSeq  uint64   // seq at the cut
	clamped []atomic.Int64
}

// stretch is what a Histogram recorded between two cuts: a Counts per
// lane.
type stretch struct{ lanes []*Counts }

func newStretch(lanes int) *stretch {
	s := &stretch{lanes: make([]*Counts, lanes)}
	for i := range s.lanes {
		s.lanes[i] = NewCounts()
	}
	return s
}

// NewHistogram returns an empty Histogram of one lane.
func NewHistogram() *Histogram { return NewLanes(1) }

// NewLanes returns an empty Histogram of n lanes.
func NewLanes(n int) *Histogram {
	h := &Histogram{spare: newStretch(n), clamped: make([]atomic.Int64, n)}
	h.active.Store(newStretch(n))
	return h
}

// micros turns a latency in nanoseconds into the microseconds lane
// records: negative values become 0, values above HighestMicros
// HighestMicros, counted in Clamped.
func (h *Histogram) micros(lane int, ns int64) int64 {
	us := max(ns/1000, 0)
	if us > HighestMicros {
		us = HighestMicros
		h.clamped[lane].Add(1)
	}
	return us
}

// RecordNanos records a latency given in nanoseconds in lane 0. Negative
// values are recorded as 0; values above HighestMicros are recorded as
// HighestMicros and counted in Clamped. It does not allocate and must not
// be called concurrently with itself or RecordPair.
func (h *Histogram) RecordNanos(ns int64) {
	us := h.micros(0, ns)
	h.seq.Add(1)
	h.active.Load().lanes[0].Record(us)
	h.seq.Add(1)
}

// RecordPair records a in lane 0 and b in lane 1, as RecordNanos does, under
// one guard: half the atomic operations of two histograms. The Histogram
// must have two lanes or more.
func (h *Histogram) RecordPair(a, b int64) {
	ua, ub := h.micros(0, a), h.micros(1, b)
	h.seq.Add(1)
	s := h.active.Load()
	s.lanes[0].Record(ua)
	s.lanes[1].Record(ub)
	h.seq.Add(1)
}

// Cut ends the stretch being recorded: values recorded from now on go to
// fresh counts, the ones before are kept for FoldInto. A Cut without a
// FoldInto since the previous one does nothing, so no value is ever lost.
// It is safe to call concurrently with RecordNanos and RecordPair.
func (h *Histogram) Cut() {
	h.drainMu.Lock()
	defer h.drainMu.Unlock()
	if h.cut != nil {
		return
	}
	h.cut = h.active.Swap(h.spare)
	h.spare = nil
	h.cutSeq = h.seq.Load()
}

// FoldInto adds the values of lane i cut by the last Cut to dst[i] (one
// destination per lane); without a Cut, it does nothing. It is safe to call concurrently with RecordNanos
// and RecordPair.
func (h *Histogram) FoldInto(dst ...*Counts) {
	h.drainMu.Lock()
	defer h.drainMu.Unlock()
	old := h.cut
	if old == nil {
		return
	}
	// A writer that loaded old before the swap may still be writing to it:
	// wait until its sequence number moves on. Writers that started after
	// the swap use the new counts.
	if s := h.cutSeq; s&1 == 1 {
		for h.seq.Load() == s {
			runtime.Gosched()
		}
	}
	for i, c := range old.lanes {
		dst[i].Add(c)
		c.Reset()
	}
	h.cut, h.spare = nil, old
}

// Clamped returns how many values recorded in lane exceeded HighestMicros.
func (h *Histogram) Clamped(lane int) int64 { return h.clamped[lane].Load() }

// Encode returns the histogram in HdrHistogram's compressed, base64-encoded V2
// format, readable by every HdrHistogram implementation.
func Encode(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// Decode parses a histogram written by Encode.
func Decode(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// Latency summarises a latency distribution. All values are milliseconds with
// microsecond resolution.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P75   float64 `json:"p75"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	P9999 float64 `json:"p99_99"`
	Max   float64 `json:"max"`
}

// Percentiles lists the percentiles Summarize reports, in order.
var Percentiles = []float64{50, 75, 95, 99, 99.9, 99.99}

// Summarize computes the summary of h. An empty histogram gives zeros.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	v := h.ValueAtPercentilesSlice(Percentiles)
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		P50:   ms(v[0]),
		P75:   ms(v[1]),
		P95:   ms(v[2]),
		P99:   ms(v[3]),
		P999:  ms(v[4]),
		P9999: ms(v[5]),
		Max:   ms(h.Max()),
	}
}
