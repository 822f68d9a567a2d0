package runner

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
)

// TestMessageShapeRun: a run with a size distribution, a compressibility
// target and Zipf keys accounts for every message, computes its byte rate
// from the pool's mean size, and records what its pool holds.
func TestMessageShapeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Delay = time.Millisecond
		w := baseWorkload()
		w.ProducerRate, w.Warmup, w.Duration = 1000, time.Second, 5*time.Second
		w.PayloadPoolSize = 100
		w.MessageSizes = &payload.Sizes{Buckets: []payload.Bucket{{Min: 100, Max: 100, Weight: 3}, {Min: 2000, Max: 4000, Weight: 1}}}
		w.Compressibility = &payload.Compressibility{Codec: "lz4", Ratio: 0.5}
		w.KeyDistributor, w.KeyCount, w.KeyZipfExponent = payload.ZipfKey, 100, 1
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Workload: w, Driver: b.NewDriver()})
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Counts; c.Lost != 0 || c.Duplicated != 0 || c.Acked != c.Sent || c.Consumed != c.Acked {
			t.Errorf("accounting %+v: every message of every size is accounted for", c)
		}
		p := res.Payloads
		if p == nil || p.Count != 100 || p.MinBytes != 100 || p.MaxBytes < 2000 || p.MaxBytes > 4000 || math.Abs(p.MeanBytes-float64(w.MessageSize)) > 0.5 {
			t.Fatalf("payloads %+v (messageSize %d)", p, w.MessageSize)
		}
		if p.Codec != "lz4" || math.Abs(p.CompressionRatio-0.5) > 0.03 {
			t.Errorf("compression %s %.3f: want lz4 at 0.5", p.Codec, p.CompressionRatio)
		}
		var summary strings.Builder
		results.PrintSummary(&summary, res)
		if want := fmt.Sprintf("messages of 100-%d B (mean %.0f B) compressing to 0.5", p.MaxBytes, p.MeanBytes); !strings.Contains(summary.String(), want) {
			t.Errorf("summary does not say %q:\n%s", want, summary.String())
		}
		m := res.Measured
		if want := m.PublishRate * p.MeanBytes / 1e6; math.Abs(m.PublishMBps-want) > want/100 {
			t.Errorf("publish %.3f MB/s, want %.3f: the rate times the mean size", m.PublishMBps, want)
		}
	})
}
