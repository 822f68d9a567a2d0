package runner

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestIsolatedBlockingSendsAreTheBrokers: at a fixed rate, a few Sends
// that each block 80 ms make the sends behind them leave late. Every one
// of those waits is counted, not only a sampled Send's, so the verdict
// names the broker, with the share of time and the longest wait, and not
// the load generator's schedule.
func TestIsolatedBlockingSendsAreTheBrokers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &workload.Workload{Name: "stalls", Topics: 1, PartitionsPerTopic: 1, MessageSize: 100, ProducersPerTopic: 1,
			SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1, ProducerRate: 1000, Duration: 4500 * time.Millisecond}
		// Sends 997, 1994, 2991 and 3988 stall (stallingDriver is in
		// validation_test.go); none is a multiple of 64, the stride of
		// the sends timed on their own.
		d := &stallingDriver{Driver: memory.NewBroker().NewDriver(), stallEvery: 997, stall: 80 * time.Millisecond}
		res, err := Run(context.Background(), Config{Workload: w, Driver: d, DrainTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Measured
		if want := 4 * 0.080 / 4.5; m.BrokerWaitShare < want*0.9 || m.BrokerWaitShare > want*1.1 {
			t.Errorf("producers waited on the broker %.4f of the time, want about %.4f (four 80 ms stalls in 4.5 s)", m.BrokerWaitShare, want)
		}
		if m.LongestBrokerWaitMs < 80 || m.LongestBrokerWaitMs > 81 {
			t.Errorf("longest wait on the broker %.1f ms, want 80", m.LongestBrokerWaitMs)
		}
		if res.Target == nil {
			t.Fatal("no target verdict")
		}
		if res.Target.LoadGeneratorBound || !strings.HasPrefix(res.Target.Limit, "the broker") {
			t.Errorf("verdict limit %q (load-generator-bound %v), want the broker", res.Target.Limit, res.Target.LoadGeneratorBound)
		}
	})
}
