package main

import (
	"math"
	"strconv"
	"testing"
	"time"
)

func TestPeerSummary(t *testing.T) {
	for _, c := range []struct {
		name, out string
		d         time.Duration
		ops       float64
		records   int64
		err       bool
	}{
		// bench_writer's last line, after its log prefix.
		{name: "writer", out: "2026/11/24 17:30:00 [bench_writer] duration: 4.000512s - 19.073mb/s - 200000.000ops/s - 5.000us/op\n",
			d: 4000512 * time.Microsecond, ops: 200000, records: 800102},
		// A start-up run reads nothing: 0 records.
		{name: "reader idle", out: "[bench_reader] duration: 1.2ms - 0.000mb/s - 0.000ops/s - NaNus/op", d: 1200 * time.Microsecond},
		{name: "no summary", out: "panic: dial tcp: connection refused", err: true},
		{name: "bad duration", out: "duration: soon - 1mb/s - 5ops/s", err: true},
	} {
		d, ops, err := peerSummary(c.out)
		if (err != nil) != c.err || d != c.d || ops != c.ops {
			t.Errorf("%s: peerSummary = %v, %v, %v; want %v, %v, error %v", c.name, d, ops, err, c.d, c.ops, c.err)
		}
		if n, _ := peerCount(c.out); n != c.records {
			t.Errorf("%s: peerCount = %d, want %d", c.name, n, c.records)
		}
	}
}

// FuzzPeerSummary checks that no output makes the summary reader panic,
// and that what it reads from one is what it reads again from a summary
// line it is written back into.
func FuzzPeerSummary(f *testing.F) {
	f.Add("[bench_writer] duration: 4.000512s - 19.073mb/s - 200000.000ops/s - 5.000us/op")
	f.Add("duration: 1ms - x - -3ops/s")
	f.Fuzz(func(t *testing.T, out string) {
		d, ops, err := peerSummary(out)
		if err != nil || math.IsNaN(ops) {
			return
		}
		d2, ops2, err := peerSummary("duration: " + d.String() + " - 0mb/s - " + strconv.FormatFloat(ops, 'g', -1, 64) + "ops/s - 0us/op")
		if err != nil || d2 != d || ops2 != ops {
			t.Errorf("%q read as %v, %v; written back, read as %v, %v, %v", out, d, ops, d2, ops2, err)
		}
	})
}
