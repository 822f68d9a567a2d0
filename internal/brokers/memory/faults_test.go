package memory_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// faultWorkload is 2000 msg/s for 10 s after a 1 s warm-up, with the
// given fault schedule.
func faultWorkload(schedule ...workload.Fault) *workload.Workload {
	return &workload.Workload{
		Name: "faults", Topics: 1, PartitionsPerTopic: 2, MessageSize: 100, PayloadRandomRatio: 1, PayloadPoolSize: 10,
		KeyDistributor: payload.NoKey, ProducersPerTopic: 1, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1,
		ProducerRate: 2000, Duration: 10 * time.Second, Warmup: time.Second, Seed: 1, Faults: schedule,
	}
}

// runWithFaults runs w on a broker with the given one-way delay, its
// faults made by the memory module, each producer with at most window
// bytes in flight (0: the runner's default).
func runWithFaults(t *testing.T, delay time.Duration, window int, w *workload.Workload) *results.Run {
	t.Helper()
	b := memory.NewBroker()
	b.Delay = delay
	drv := b.NewDriver()
	sched, heal, err := memory.Faults(drv, w.Faults)
	if err != nil {
		t.Fatal(err)
	}
	defer heal()
	res, err := runner.Run(context.Background(), runner.Config{Workload: w, Driver: drv, Faults: sched, MaxInFlightBytes: window})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestKillIsTheBrokersOutage: a kill of the memory broker's node for 2 s
// stores nothing for 2 s; the run records the kill and its undo, measures
// the outage, names the broker as the limit of the target its producers
// missed once their 100-message windows filled, and loses nothing.
func TestKillIsTheBrokersOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := runWithFaults(t, time.Millisecond, 100*100, faultWorkload(workload.Fault{At: 3 * time.Second, Action: workload.FaultKill, Node: workload.NodeLeader, For: 2 * time.Second}))
		if len(res.Faults) != 2 || res.Faults[0].Target != "the memory broker" || res.Faults[0].Error != "" || res.Faults[1].Action != "restart the node of 'kill leader'" {
			t.Fatalf("fault events %+v: want the kill and its undo", res.Faults)
		}
		var longest float64
		for _, o := range res.Measured.Outages {
			longest = max(longest, o.Seconds)
		}
		if longest < 1.9 || longest > 2.1 {
			t.Errorf("outages %+v: want one of 2 s", res.Measured.Outages)
		}
		if tg := res.Target; tg == nil || tg.Held || tg.LoadGeneratorBound || !strings.Contains(tg.Limit, "the broker: an outage") {
			t.Errorf("target %+v: the broker's outage is the limit", tg)
		}
		if c := res.Counts; c.Lost != 0 || c.Failed != 0 || c.Acked != c.Sent || c.Consumed < c.Acked {
			t.Errorf("accounting %+v: a kill of the in-process broker loses nothing", c)
		}
	})
}

// TestResetFailsWhatIsInFlight: a reset of the clients' connections fails
// the messages on their way to the broker (about 100 ms of them at a
// 50 ms one-way delay and 2000 msg/s), and only those; none is lost.
func TestResetFailsWhatIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := runWithFaults(t, 50*time.Millisecond, 0, faultWorkload(workload.Fault{At: 3 * time.Second, Action: workload.FaultReset, Node: "1", Peer: workload.PeerClient}))
		c := res.Counts
		if c.Failed < 90 || c.Failed > 110 {
			t.Errorf("%d sends failed: want the ~100 on their way at the reset", c.Failed)
		}
		if c.Acked+c.Failed != c.Sent || c.Lost != 0 {
			t.Errorf("accounting %+v", c)
		}
	})
}

// TestLinkDelayAddsLatency: a 100 ms link delay for 3 s adds 200 ms to
// the publish latency of the messages it delays, and nothing after it.
func TestLinkDelayAddsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := runWithFaults(t, time.Millisecond, 0, faultWorkload(workload.Fault{At: 3 * time.Second, Action: workload.FaultDelay, Node: "1", Delay: 100 * time.Millisecond, For: 3 * time.Second}))
		var during, after float64
		for _, iv := range res.Intervals {
			switch {
			case iv.StartSeconds >= 4.5 && iv.EndSeconds <= 6.5:
				during = max(during, iv.PublishLatency.P50)
			case iv.StartSeconds >= 8:
				after = max(after, iv.PublishLatency.P50)
			}
		}
		if during < 200 || during > 205 || after > 5 {
			t.Errorf("publish p50 %.1f ms during the delay, %.1f ms after: want about 202 and 2", during, after)
		}
	})
}

// TestFaultsTheMemoryBrokerCannotTake: each is refused with what to do.
func TestFaultsTheMemoryBrokerCannotTake(t *testing.T) {
	drv := memory.NewBroker().NewDriver()
	for _, c := range []struct {
		f    workload.Fault
		want string
	}{
		{workload.Fault{Action: workload.FaultKill, Node: "2"}, "one node"},
		{workload.Fault{Action: workload.FaultBandwidth, Node: "1", BandwidthKBps: 100}, "ceiling.per.second"},
		{workload.Fault{Action: workload.FaultDelay, Node: "1", Delay: time.Millisecond, Jitter: time.Millisecond}, "jitter"},
		{workload.Fault{Action: workload.FaultPartition, Node: "1", Peer: "3"}, "peer: client"},
	} {
		if _, _, err := memory.Faults(drv, []workload.Fault{c.f}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.f, err, c.want)
		}
	}
}
