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
		d := &stallingDriver{Driver: memory.NewBroker().NewDriver(), stalls: every(997), stall: 80 * time.Millisecond}
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

// TestLatenessBuiltUpInShortWaitsIsTheBrokers: at 1,000 msg/s, bursts of
// ten Sends in a row that each block 3 ms, one burst every 500 sends,
// put the producer up to 20 ms behind. No single wait reaches the send
// lag limit and the producers wait on the broker only 6% of the time,
// but all of the lateness built up while they waited: the verdict names
// the broker, not the load generator's schedule.
func TestLatenessBuiltUpInShortWaitsIsTheBrokers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &workload.Workload{Name: "bursts", Topics: 1, PartitionsPerTopic: 1, MessageSize: 100, ProducersPerTopic: 1,
			SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1, ProducerRate: 1000, Duration: 4500 * time.Millisecond}
		d := &stallingDriver{Driver: memory.NewBroker().NewDriver(), stall: 3 * time.Millisecond,
			stalls: func(n int) bool { return n%500 >= 1 && n%500 <= 10 }}
		res, err := Run(context.Background(), Config{Workload: w, Driver: d, DrainTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Measured
		if m.LongestBrokerWaitMs > 3.1 || m.BrokerWaitShare > 0.1 {
			t.Fatalf("longest wait %.1f ms, %.3f of the time waiting: want the short waits this test is about", m.LongestBrokerWaitMs, m.BrokerWaitShare)
		}
		if m.SendLag.P99 < 11 {
			t.Fatalf("send lag p99 %.1f ms: want the sends late beyond the limit", m.SendLag.P99)
		}
		if m.LateBehindBrokerShare < 0.9 {
			t.Errorf("%.2f of the lateness built up while waiting on the broker, want nearly all", m.LateBehindBrokerShare)
		}
		if res.Target == nil || res.Target.LoadGeneratorBound || !strings.HasPrefix(res.Target.Limit, "the broker") {
			t.Errorf("verdict %+v, want the broker", res.Target)
		}
	})
}
