package runner

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestSlowConsumersBoundTheConsumeRate: two consumers that spend 4 ms on
// each message receive at most 2*1000/4 = 500 msg/s, so with 1000 msg/s
// published the backlog grows by 500 messages a second, interval by
// interval; end-to-end latency is measured at receipt, so it is the time
// a message waited for the consumers, not that plus its 4 ms of
// processing. The run says the consumers fell behind, and why.
func TestSlowConsumersBoundTheConsumeRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := workload.Parse("slow.yaml", []byte(`name: slow
partitionsPerTopic: 2
messageSize: 100
consumersPerSubscription: 2
consumerProcessingTime: 4ms
rate: 1000
warmup: 0s
duration: 8s
`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Workload: w, Driver: memory.NewBroker().NewDriver(), DrainTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ivs := measured(res)
		if len(ivs) != 8 {
			t.Fatalf("%d measured intervals, want 8", len(ivs))
		}
		for i, iv := range ivs {
			if math.Abs(iv.ConsumeRate-500) > 1 {
				t.Errorf("interval %d: consumed %.1f msg/s, want the consumers' ceiling of 500", i, iv.ConsumeRate)
			}
			// Published 1000 a second, consumed 500: 500 more each second.
			if want := 500 * (i + 1); math.Abs(float64(iv.Backlog-int64(want))) > 3 {
				t.Errorf("interval %d: backlog %d, want %d", i, iv.Backlog, want)
			}
		}
		m := res.Measured
		if math.Abs(m.BacklogGrowth-500) > 1 {
			t.Errorf("backlog grew by %.1f msg/s, want 500", m.BacklogGrowth)
		}
		// The message received at t s was sent at t/2 s: the last one of
		// the 8 s waited 4 s for the consumers, and no processing time is
		// part of that.
		if e := m.EndToEndLatency; e.Max < 3990 || e.Max > 4000 {
			t.Errorf("end-to-end latency max %.3f ms, want just under 4000", e.Max)
		}
		var summary strings.Builder
		results.PrintSummary(&summary, res)
		if want := "2 consumer(s) processing each message for 4ms, target 1000 msg/s"; !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary.String())
		}
		if !strings.Contains(m.ConsumersBehind, "fell behind") || !strings.Contains(m.ConsumersBehind, "consumerProcessingTime (4ms) caps the 2 consumers of each subscription at 500 msg/s") {
			t.Errorf("consumers behind: %q", m.ConsumersBehind)
		}
	})
}

// TestFastConsumersKeepUp: the same consumers at 1 ms a message (a
// ceiling of 2000 msg/s) keep up with 1000 msg/s; each message is
// received as soon as it is stored.
func TestFastConsumersKeepUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := workload.Parse("fast.yaml", []byte(`name: fast
partitionsPerTopic: 2
messageSize: 100
consumersPerSubscription: 2
consumerProcessingTime:
  uniform: {min: 0s, max: 2ms}
rate: 1000
warmup: 0s
duration: 4s
`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Workload: w, Driver: memory.NewBroker().NewDriver()})
		if err != nil {
			t.Fatal(err)
		}
		for i, iv := range measured(res) {
			if math.Abs(iv.ConsumeRate-1000) > 3 || iv.Backlog > 3 {
				t.Errorf("interval %d: consumed %.1f msg/s with a backlog of %d, want 1000 and none", i, iv.ConsumeRate, iv.Backlog)
			}
		}
		if m := res.Measured; m.ConsumersBehind != "" || res.Counts.Consumed != res.Counts.Sent {
			t.Errorf("consumers behind %q, consumed %d of %d", m.ConsumersBehind, res.Counts.Consumed, res.Counts.Sent)
		}
	})
}
