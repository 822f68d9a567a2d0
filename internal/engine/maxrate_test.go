package engine

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/maxrate"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// searchOnMemory makes a max-rate search, a step search or with a ramp
// of the given length, on a memory broker 1 ms away that stores at most
// 5000 msg/s, in a synctest bubble: it returns the rate found, the runs
// made, and how long the search would have taken on a real clock.
func searchOnMemory(t *testing.T, ramp time.Duration) (rate float64, runs int, took time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		w, err := workload.Parse("ceiling.yaml", []byte(`name: ceiling
partitionsPerTopic: 3
messageSize: 100
producersPerTopic: 2
rate: 1000
warmup: 1s
duration: 5s
`))
		if err != nil {
			t.Fatal(err)
		}
		b := memory.NewBroker()
		b.Delay, b.Ceiling = time.Millisecond, 5000
		cfg := runner.Config{Workload: w, Driver: b.NewDriver(), DrainTimeout: 2 * time.Second, MaxInFlightBytes: 64 << 10}
		slo, err := maxrate.ParseSLO("p99<50ms")
		if err != nil {
			t.Fatal(err)
		}
		o := DefaultRunOptions()
		o.Repeats, o.Ramp = 0, ramp
		start := time.Now()
		res, err := searchMaxRate(context.Background(), IO{Out: io.Discard, Err: io.Discard}, cfg, runner.Run, slo, &o)
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		rate, runs = res.MaxRate.Rate, len(res.MaxRate.Steps)
		for _, s := range res.MaxRate.Steps {
			t.Log(results.RateStepLine(s))
		}
	})
	return rate, runs, took
}

// TestRampSearchOnMemory: against a broker that stores at most 5000
// msg/s, the step search and the ramp search both find a rate within 5%
// below the ceiling, and the ramp takes fewer runs and less time.
func TestRampSearchOnMemory(t *testing.T) {
	stepRate, stepRuns, stepTook := searchOnMemory(t, 0)
	rampRate, rampRuns, rampTook := searchOnMemory(t, 20*time.Second)
	t.Logf("step search: %.0f msg/s in %d runs, %s; ramp search: %.0f msg/s in %d runs, %s", stepRate, stepRuns, stepTook, rampRate, rampRuns, rampTook)
	for _, r := range []float64{stepRate, rampRate} {
		if r < 4750 || r > 5000 {
			t.Errorf("found %.0f msg/s, want 4750 to 5000 under the ceiling of 5000", r)
		}
	}
	if rampRuns >= stepRuns || rampTook >= stepTook {
		t.Errorf("the ramp took %d runs and %s, the steps %d and %s: want the ramp faster", rampRuns, rampTook, stepRuns, stepTook)
	}
}
