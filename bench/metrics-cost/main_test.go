package main

import (
	"math"
	"testing"
)

func TestStatTicks(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int64
		err  bool
	}{
		// utime 1500 and stime 250 are fields 14 and 15.
		{"42 (java) S 1 42 42 0 -1 4194560 900 0 0 0 1500 250 0 0 20 0 96 0 100 4000000000 100000", 1750, false},
		// A command with spaces and parentheses ends at the last ')'.
		{"42 (a (b) c) S 1 42 42 0 -1 4194560 900 0 0 0 7 3 0 0 20 0 96 0 100 4000000000 100000", 10, false},
		// Cut short: no CPU fields.
		{"42 (java) S 1 42", 0, true},
		// No command at all.
		{"garbage", 0, true},
	} {
		got, err := statTicks(tc.stat)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("statTicks(%q) = %d, %v; want %d, error %v", tc.stat, got, err, tc.want, tc.err)
		}
	}
}

func TestProgressLine(t *testing.T) {
	m := progressLine.FindStringSubmatch("  12.0s measure pub      5000 msg/s    0.50 MB/s | cons      5000 msg/s")
	if m == nil || m[1] != "12.0" || m[2] != "measure" {
		t.Errorf("progress line read as %q", m)
	}
	if progressLine.MatchString("producing: warmup 2s, measurement 8s") {
		t.Error("a setup line read as an interval")
	}
}

func TestAnalysePairs(t *testing.T) {
	r := &loadResult{Intervals: []interval{
		// Pair (1,2): the read is in the second.
		{N: 1, BrokerCPU: 50, PublishP99: 10, PublishAvg: 2, Published: 100},
		{N: 2, Read: true, BrokerCPU: 54, PublishP99: 12, PublishAvg: 2, Published: 100},
		// Pair (3,4): the read is in the first.
		{N: 3, Read: true, BrokerCPU: 60, PublishP99: 10, PublishAvg: 4, Published: 300},
		{N: 4, BrokerCPU: 58, PublishP99: 10, PublishAvg: 2, Published: 100},
		// 5 has no partner (6 was not measured): left out.
		{N: 5, Read: true, BrokerCPU: 99, Published: 100},
		// 8 without 7: left out.
		{N: 8, BrokerCPU: 1, Published: 100},
	}}
	r.analyse()
	if r.Pairs != 2 || r.On.Intervals != 2 || r.Off.Intervals != 2 {
		t.Fatalf("%d pairs, %d and %d intervals; want 2 pairs", r.Pairs, r.On.Intervals, r.Off.Intervals)
	}
	if r.On.BrokerCPU != 57 || r.Off.BrokerCPU != 54 || r.BrokerCPU.Mean != 3 {
		t.Errorf("broker CPU with %v, without %v, difference %v; want 57, 54, +3", r.On.BrokerCPU, r.Off.BrokerCPU, r.BrokerCPU)
	}
	// Differences 4 and 2: mean 3, sd sqrt(2), CI 1.96*sqrt(2)/sqrt(2).
	if math.Abs(r.BrokerCPU.CI95-1.96) > 1e-9 {
		t.Errorf("CI %v, want 1.96", r.BrokerCPU.CI95)
	}
	// The mean latency is weighted by the messages published.
	if r.On.PublishAvg != 3.5 || r.Off.PublishAvg != 2 {
		t.Errorf("mean publish latency with %v, without %v; want 3.5 and 2", r.On.PublishAvg, r.Off.PublishAvg)
	}
}
