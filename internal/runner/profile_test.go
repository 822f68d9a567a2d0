package runner

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// rampWorkload is a 10-second run of two producers whose total rate ramps
// from 1000 to 4000 msg/s, read from a workload file.
func rampWorkload(t *testing.T) *workload.Workload {
	w, err := workload.Parse("ramp.yaml", []byte(`name: ramp
partitionsPerTopic: 6
messageSize: 100
producersPerTopic: 2
warmup: 0s
duration: 10s
rateProfile:
  ramp: {from: 1000, to: 4000, over: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRampRunFollowsProfile: on the memory broker 2 ms away (its driver's
// delay.ms), a ramp from 1000 to 4000 msg/s over the 10 s measurement is
// held interval by interval: each interval's target rate is the ramp's
// mean over it, and the acknowledgements, 4 ms behind their sends, follow
// it to within what those 4 ms of ramp make. The run sends exactly the
// ramp's messages and holds its target, a mean of 2500 msg/s.
func TestRampRunFollowsProfile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Delay = 2 * time.Millisecond
		res, err := Run(context.Background(), Config{Workload: rampWorkload(t), Driver: b.NewDriver()})
		if err != nil {
			t.Fatal(err)
		}
		ivs := measured(res)
		if len(ivs) != 10 {
			t.Fatalf("%d measured intervals, want 10", len(ivs))
		}
		for i, iv := range ivs {
			// The ramp's mean over [i, i+1) s of the run's clock, which
			// the producers' schedule starts 1 ms after.
			from, to := float64(i), float64(i+1)
			if want := rampSends(to-0.001) - rampSends(from-0.001); math.Abs(iv.TargetRate-want) > 1e-6 {
				t.Errorf("interval %d: target %.3f msg/s, want %.3f", i, iv.TargetRate, want)
			}
			// Acknowledged: what was sent 4 ms before.
			if want := rampSends(to-0.005) - rampSends(from-0.005); math.Abs(iv.PublishRate-want) > 1.5 {
				t.Errorf("interval %d: achieved %.1f msg/s, want %.1f for a target of %.1f", i, iv.PublishRate, want, iv.TargetRate)
			}
		}
		// Sends due up to the end of the 10 s, 9.999 s into the ramp.
		if c, want := res.Counts, int64(rampSends(9.999))+1; c.Sent != want {
			t.Errorf("sent %d, want the ramp's %d", c.Sent, want)
		}
		if tg := res.Target; tg == nil || !tg.Held || math.Abs(tg.Rate-2500) > 1 {
			t.Errorf("target %+v: want a held mean target of 2500 msg/s", tg)
		}
		var summary strings.Builder
		results.PrintSummary(&summary, res)
		for _, want := range []string{"rate profile, mean target 2500 msg/s", "rate profile followed: no interval of 10 fell more than 5% short"} {
			if !strings.Contains(summary.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, summary.String())
			}
		}
	})
}

// rampSends is the integral of rampWorkload's rate from its start to t
// seconds: 1000t + 150t².
func rampSends(t float64) float64 {
	t = max(0, t)
	return 1000*t + 150*t*t
}

// TestRampRunMeetsCeiling: the same ramp on a broker that stores at most
// 3000 msg/s (its driver's ceiling.per.second): the acknowledgements
// follow the ramp (after the first interval, which the 4 ms round trip
// shortens) until it passes the ceiling at 6.67 s, then stay at the
// ceiling while the target goes on rising, and the run says the target
// was not held.
func TestRampRunMeetsCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Delay, b.Ceiling = 2*time.Millisecond, 3000
		res, err := Run(context.Background(), Config{Workload: rampWorkload(t), Driver: b.NewDriver()})
		if err != nil {
			t.Fatal(err)
		}
		for i, iv := range measured(res) {
			switch {
			case i > 0 && i < 6 && math.Abs(iv.PublishRate-iv.TargetRate) > 3:
				t.Errorf("interval %d, below the ceiling: achieved %.1f msg/s for a target of %.1f", i, iv.PublishRate, iv.TargetRate)
			case i >= 7 && (math.Abs(iv.PublishRate-3000) > 3 || iv.TargetRate < 3100):
				t.Errorf("interval %d, above the ceiling: achieved %.1f msg/s for a target of %.1f; want the ceiling's 3000", i, iv.PublishRate, iv.TargetRate)
			}
		}
		if tg := res.Target; tg == nil || tg.Held {
			t.Errorf("target %+v: want not held", tg)
		}
		// The intervals from 7 s on fell short, the last most: 3000 msg/s
		// for the ramp's mean of 3850 over it.
		f := results.FollowedProfile(res)
		if f == nil || len(f.Short) != 3 || math.Abs(f.Short[0]-8) > 0.01 || math.Abs(f.AtSeconds-10) > 0.01 || math.Abs(f.MaxDeviation-(3000.0/3850-1)) > 0.002 {
			t.Errorf("profile fit %+v: want the intervals ending at 8, 9 and 10 s short, the last by %.3f", f, 3000.0/3850-1)
		}
		var summary strings.Builder
		results.PrintSummary(&summary, res)
		if want := "RATE PROFILE NOT FOLLOWED: 3 of 10 intervals fell more than 5% short of their target (ending at 8.0, 9.0, 10.0 s); largest deviation -22.1%"; !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary.String())
		}
	})
}

// measured returns the run's measurement intervals.
func measured(res *results.Run) []results.Interval {
	var ivs []results.Interval
	for _, iv := range res.Intervals {
		if iv.Phase == results.Measure {
			ivs = append(ivs, iv)
		}
	}
	return ivs
}

// BenchmarkProducerSendRamp is BenchmarkProducerSend's constant case on a
// ramp shared by four producers, at rates no producer reaches.
func BenchmarkProducerSendRamp(b *testing.B) {
	benchmarkSend(b, pacer.Share(pacer.NewRamp(1e12, 2e12, time.Hour), 4, 1))
}
