package capture

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// syntheticTopic feeds an Observer what a topic of known shape holds:
// 100 msg/s for 5 s then 300 msg/s for 5 s; sizes of 100-200 bytes (3
// in 4) and 1000-2000 bytes, compressing to 0.5 with zstd; 300 keys of
// Zipf exponent 1.0 over 4 partitions by key; headers of 10 bytes on
// every other message. It returns the observer and the time of the
// first message.
func syntheticTopic(t *testing.T) (*Observer, time.Time, [][]byte) {
	t.Helper()
	pool, err := payload.Generate(payload.Spec{
		PoolSize: 400, Seed: 9,
		Sizes:    payload.Sizes{Buckets: []payload.Bucket{{Min: 100, Max: 200, Weight: 3}, {Min: 1000, Max: 2000, Weight: 1}}},
		Compress: &payload.Compressibility{Codec: "zstd", Ratio: 0.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := payload.NewKeys(payload.KeySpec{Mode: payload.ZipfKey, Count: 300, ZipfS: 1.0}, 4)
	if err != nil {
		t.Fatal(err)
	}
	o := NewObserver(1)
	o.Partitions = 4
	origin := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	i := 0
	for sec, rate := range []int{100, 100, 100, 100, 100, 300, 300, 300, 300, 300} {
		for j := range rate {
			key := keys.Next()
			r := Record{
				Partition: int32(testHash(key) % 4), Key: key, Value: pool.Payloads[i%len(pool.Payloads)], Codec: "none",
				Time: origin.Add(time.Duration(sec)*time.Second + time.Duration(j)*time.Second/time.Duration(rate)),
			}
			if i%2 == 0 {
				r.HeaderBytes = 10
			}
			o.Observe(r)
			i++
		}
	}
	return o, origin, pool.Payloads
}

// TestShapeOfSyntheticTopic: the statistics of a topic of known shape
// come back: the counts per second exactly, the mean size within 1%,
// the share of small messages within 0.01, the distinct keys exactly
// (fewer than the sketch's counters), the Zipf exponent within 0.1, the
// zstd ratio within 0.05, the partitions' counts exactly.
func TestShapeOfSyntheticTopic(t *testing.T) {
	o, origin, pool := syntheticTopic(t)
	s := o.Shape("orders", origin, origin.Add(10500*time.Millisecond), false)
	if want := []int64{100, 100, 100, 100, 100, 300, 300, 300, 300, 300}; !reflect.DeepEqual(s.Rate.PerSecond, want) {
		t.Errorf("per second %v, want %v", s.Rate.PerSecond, want)
	}
	if s.Messages != 2000 || s.Rate.Peak != 300 || s.Rate.Mean != 200 {
		t.Errorf("%d messages, peak %d, mean %v; want 2000, 300, 200", s.Messages, s.Rate.Peak, s.Rate.Mean)
	}
	var poolMean float64
	for _, p := range pool {
		poolMean += float64(len(p)) / float64(len(pool))
	}
	if math.Abs(s.Sizes.Mean-poolMean) > 0.01*poolMean {
		t.Errorf("mean size %.1f, the pool's %.1f", s.Sizes.Mean, poolMean)
	}
	if share := smallShare(s.Sizes.Buckets, 512); math.Abs(share-0.75) > 0.01 {
		t.Errorf("share of messages up to 512 bytes %.3f, want 0.75", share)
	}
	if s.Sizes.P50 < 100 || s.Sizes.P50 > 200 || s.Sizes.P99 < 1000 || s.Sizes.Max > 2000 {
		t.Errorf("sizes p50 %d, p99 %d, max %d", s.Sizes.P50, s.Sizes.P99, s.Sizes.Max)
	}
	distinct := map[uint64]bool{}
	var byPartition [4]int64
	for _, c := range o.top.Counts() {
		distinct[c.Hash] = true
	}
	if s.Keys.Keyed != 2000 || s.Keys.Distinct != uint64(len(distinct)) || s.Keys.Uniform {
		t.Errorf("keys %+v, want 2000 keyed, %d distinct, not uniform", s.Keys, len(distinct))
	}
	if math.Abs(s.Keys.ZipfExponent-1.0) > 0.1 {
		t.Errorf("Zipf exponent %.3f, want 1.0 within 0.1", s.Keys.ZipfExponent)
	}
	if r := s.Compression.Ratios["zstd"]; math.Abs(r-0.5) > 0.05 {
		t.Errorf("zstd ratio of the sample %.3f, want 0.5 within 0.05", r)
	}
	for p, n := range s.Partitions.Messages {
		byPartition[p] = n
	}
	if s.Partitions.Count != 4 || byPartition[0]+byPartition[1]+byPartition[2]+byPartition[3] != 2000 || s.Partitions.Skew < 1 {
		t.Errorf("partitions %+v", s.Partitions)
	}
	if s.Headers.Messages != 1000 || s.Headers.MeanBytes != 10 || s.Headers.MaxBytes != 10 {
		t.Errorf("headers %+v", s.Headers)
	}
}

// smallShare is the share of the messages of buckets up to limit bytes.
func smallShare(buckets []SizeBucket, limit int) float64 {
	var small, total int64
	for _, b := range buckets {
		total += b.Count
		if b.Max <= limit {
			small += b.Count
		}
	}
	return float64(small) / float64(total)
}

// TestReplayWorkload: the replay of a synthetic topic loads as a
// workload with its partitions, a stepped curve of its counts per
// second, its sizes, ZIPF keys over its distinct keys and its
// compressibility; the files are all written.
func TestReplayWorkload(t *testing.T) {
	o, origin, _ := syntheticTopic(t)
	dir := t.TempDir()
	res, err := write(dir, o.Shape("orders", origin, origin.Add(10500*time.Millisecond), false))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ShapeFile, PageFile, WorkloadFile, CurveFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	w, err := workload.Load(filepath.Join(dir, WorkloadFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := []pacer.Point{{Seconds: 0, Rate: 100}, {Seconds: 5, Rate: 100}, {Seconds: 5, Rate: 300}}; w.RateProfile == nil || w.RateProfile.Curve == nil || !reflect.DeepEqual(w.RateProfile.Curve.Points, want) {
		t.Errorf("rate profile %+v, want the curve %v", w.RateProfile, want)
	}
	if w.PartitionsPerTopic != 4 || w.Duration != 10*time.Second || w.Warmup != 0 || w.KeyDistributor != payload.ZipfKey ||
		w.KeyCount != int(res.Shape.Keys.Distinct) || math.Abs(w.KeyZipfExponent-res.Shape.Keys.ZipfExponent) > 1e-3 {
		t.Errorf("workload %+v", w)
	}
	if w.Compressibility == nil || w.Compressibility.Codec != "zstd" || math.Abs(w.Compressibility.Ratio-0.5) > 0.05 {
		t.Errorf("compressibility %+v, want zstd at 0.5", w.Compressibility)
	}
	if w.MessageSizes == nil || math.Abs(float64(w.MessageSize)-res.Shape.Sizes.Mean) > 0.02*res.Shape.Sizes.Mean {
		t.Errorf("message sizes %+v, mean %d; captured mean %.1f", w.MessageSizes, w.MessageSize, res.Shape.Sizes.Mean)
	}
	page, err := os.ReadFile(filepath.Join(dir, PageFile))
	if err != nil || strings.Count(string(page), "<svg") != 4 {
		t.Errorf("the page has %d charts, want 4 (%v)", strings.Count(string(page), "<svg"), err)
	}
}

// TestNothingCaptured: a capture that read nothing writes its
// statistics and page, no workload, and says why.
func TestNothingCaptured(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	res, err := write(dir, NewObserver(1).Shape("quiet", now, now.Add(time.Second), false))
	if !errors.Is(err, ErrNothingCaptured) || res == nil || len(res.Files) != 2 {
		t.Fatalf("err %v, result %+v: want ErrNothingCaptured and two files", err, res)
	}
}

// FuzzObserve feeds any records to an Observer: the replay of its shape,
// when there is one, loads as a workload with the shape's partitions and
// duration. (write's check of the payloads is TestReplayWorkload's.)
func FuzzObserve(f *testing.F) {
	f.Add([]byte("\x00\x03key\x00\x40\x00\x10\x05\x01\xff\x00\x02\x01\x00\x00"))
	f.Add([]byte{})
	f.Add([]byte("\x07\xff\x04\x00\xff\xff\x00\x02\x00\x10keyvalue"))
	// One directory for every input of this process (they run one at a
	// time): a directory per input made the target spend most of its time
	// in mkdir and unlink.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		o := NewObserver(1)
		at := time.Unix(1_700_000_000, 0)
		next := func(n int) []byte {
			n = min(n, len(data))
			b := data[:n]
			data = data[n:]
			return b
		}
		for len(data) >= 6 {
			h := next(6)
			r := Record{Partition: int32(h[0]) - 8, Codec: "none", HeaderBytes: int(h[5])}
			if h[1] != 0xff {
				r.Key = append([]byte{}, next(int(h[1]%16))...)
			}
			r.Value = make([]byte, binary.BigEndian.Uint16(h[2:4])%4096)
			copy(r.Value, data)
			at = at.Add(time.Duration(int16(binary.BigEndian.Uint16(h[4:6]))) * time.Millisecond)
			r.Time = at
			o.Observe(r)
		}
		s := o.Shape("fuzz", time.Unix(1_700_000_000, 0), at.Add(time.Second), false)
		r, err := s.Replay("fuzz", CurveFile, true)
		if errors.Is(err, ErrNothingCaptured) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(os.WriteFile(filepath.Join(dir, CurveFile), r.Curve, 0o644), os.WriteFile(filepath.Join(dir, WorkloadFile), r.Workload, 0o644)); err != nil {
			t.Fatal(err)
		}
		w, err := workload.Load(filepath.Join(dir, WorkloadFile))
		if err != nil {
			t.Fatalf("%v\n%s", err, r.Workload)
		}
		if w.PartitionsPerTopic != max(s.Partitions.Count, 1) || w.Duration != time.Duration(len(trimZeros(s.Rate.PerSecond)))*time.Second {
			t.Errorf("replay of %d partitions for %v; captured %d partitions, %d seconds", w.PartitionsPerTopic, w.Duration, s.Partitions.Count, len(s.Rate.PerSecond))
		}
	})
}
