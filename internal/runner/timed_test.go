package runner

// Rate, latency and verdict tests: the reference broker under
// testing/synctest, where the test sets what the broker costs (a one-way
// delay, a ceiling) and time passes only when every goroutine waits, so
// the figures are exact whatever else the machine does.

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
)

// histogramStep is the widest a latency of up to a few seconds may be off
// by in a summary (three significant digits), in ms.
const histogramStep = 0.01

// near reports whether a latency summary value (ms) is want within the
// histogram's precision.
func near(got, want float64) bool { return math.Abs(got-want) <= histogramStep+want/1000 }

// exactLatency reports whether every value of l is want ms.
func exactLatency(l metrics.Latency, want float64) bool {
	return l.Count > 0 && near(l.P50, want) && near(l.P99, want) && near(l.Max, want)
}

// TestFixedRateRun is the core acceptance test: a 10-second fixed-rate
// run at 5000 msg/s over a broker 2 ms away holds its rate to the message,
// measures exactly 10 s, sends every message on time, records exactly the
// round trip as latency, accounts for every message, and agrees with the
// broker's count.
func TestFixedRateRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Delay = 2 * time.Millisecond
		d := b.NewDriver()
		w := baseWorkload()
		w.ProducerRate = 5000
		w.ProducersPerTopic = 2
		res, err := Run(context.Background(), Config{Workload: w, Driver: d, KeepTopics: true})
		if err != nil {
			t.Fatal(err)
		}
		m, c := res.Measured, res.Counts
		// Sends are due every 200 us; an acknowledgement due exactly on
		// the measurement's first or last instant may fall either side.
		if math.Abs(float64(m.Acked)-50000) > 2 || math.Abs(m.PublishRate-5000) > 0.2 {
			t.Errorf("%d acknowledged in the measurement, %.2f msg/s; want 50000 in 10 s", m.Acked, m.PublishRate)
		}
		if m.DurationSeconds != 10 {
			t.Errorf("measured %.9f s, want 10", m.DurationSeconds)
		}
		if tg := res.Target; tg == nil || !tg.Held || tg.Reason != "" {
			t.Errorf("target %+v: want held", tg)
		}
		if m.SendLag.Count != m.Sent || m.SendLag.Max != 0 {
			t.Errorf("send lag %+v: every send leaves at its intended time", m.SendLag)
		}
		// 2 ms to the broker and 2 ms back; 2 ms to the broker and 2 ms
		// to the consumer.
		if !exactLatency(m.PublishLatency, 4) || m.PublishLatency.Count != m.Acked || !exactLatency(m.ServiceTime, 4) {
			t.Errorf("publish latency %+v, service time %+v: want 4 ms for each of the %d acknowledged", m.PublishLatency, m.ServiceTime, m.Acked)
		}
		if !exactLatency(m.EndToEndLatency, 4) || m.EndToEndLatency.Count != m.Consumed {
			t.Errorf("end-to-end latency %+v: want 4 ms for each of the %d consumed", m.EndToEndLatency, m.Consumed)
		}
		if c.Sent != c.Acked || c.Failed != 0 || c.Unacked != 0 || c.Consumed != c.Acked || c.Foreign != 0 ||
			c.Lost != 0 || c.Duplicated != 0 || c.OutOfOrder != 0 || len(c.Subscriptions) != 1 || c.Subscriptions[0].Delivered != c.Acked {
			t.Errorf("accounting: %+v", c)
		}
		// Sends due from 1 ms to 12 s, every 200 us.
		if c.Sent < 59990 || c.Sent > 60000 {
			t.Errorf("sent %d, want 5000 msg/s for 12 s", c.Sent)
		}
		stored, err := d.(driver.WrittenCounter).Written(context.Background(), TopicName(res.ID, 0))
		if err != nil {
			t.Fatal(err)
		}
		if stored != c.Acked || c.StoredByBroker == nil || *c.StoredByBroker != stored {
			t.Errorf("broker stores %d, acked %d, recorded %v", stored, c.Acked, c.StoredByBroker)
		}
		// Intervals: two of warmup, ten of measurement, each exactly a
		// second, then what was still in flight.
		var sum int64
		prevEnd := 0.0
		for i, iv := range res.Intervals {
			if iv.StartSeconds != prevEnd {
				t.Errorf("interval %d starts at %.9f, previous ended at %.9f", i, iv.StartSeconds, prevEnd)
			}
			prevEnd = iv.EndSeconds
			sum += iv.Acked
			wantPhase := results.Measure
			switch {
			case i < 2:
				wantPhase = results.Warmup
			case i >= 12:
				wantPhase = results.Drain
			}
			if iv.Phase != wantPhase || (i < 12 && iv.EndSeconds-iv.StartSeconds != 1) {
				t.Errorf("interval %d: %s from %.9f to %.9f s, want %s lasting 1 s", i, iv.Phase, iv.StartSeconds, iv.EndSeconds, wantPhase)
			}
		}
		if len(res.Intervals) < 12 || sum != c.Acked {
			t.Errorf("%d intervals sum to %d acked, total %d", len(res.Intervals), sum, c.Acked)
		}
		if res.Histograms.PublishLatency == "" || res.Histograms.EndToEndLatency == "" {
			t.Error("histograms not encoded")
		}
	})
}

// TestMaxRateMessageLimit sends a fixed number of messages as fast as
// possible through a broker that stores at most 10,000 msg/s: they are
// all acknowledged and consumed exactly, and the rate measured is the
// broker's.
func TestMaxRateMessageLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Ceiling = 10_000
		w := baseWorkload()
		w.Warmup = 0
		w.MessageLimit = 30_000
		w.ProducersPerTopic = 3
		w.SubscriptionsPerTopic = 2
		w.KeyDistributor = payload.RoundRobin
		res, err := Run(context.Background(), Config{Workload: w, Driver: b.NewDriver()})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Counts
		if c.Sent != 30_000 || c.Acked != 30_000 || c.Consumed != 60_000 || c.Lost != 0 || c.Duplicated != 0 || c.OutOfOrder != 0 {
			t.Errorf("accounting: %+v", c)
		}
		if res.Target != nil {
			t.Errorf("max-rate run has a target: %+v", res.Target)
		}
		// Measured from the start to the last acknowledgement: 3 s, and
		// the first send's millisecond.
		if m := res.Measured; math.Abs(m.PublishRate-10_000) > 10 || m.Acked != 30_000 {
			t.Errorf("%d acknowledged at %.0f msg/s, want all 30000 at the broker's 10000 msg/s", m.Acked, m.PublishRate)
		}
	})
}

// TestInterruptedRunIsPartial interrupts a run during its third second of
// measurement: results come back, marked partial, with what was measured
// up to the interrupt, and nothing is called lost.
func TestInterruptedRunIsPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Delay = 5 * time.Millisecond
		w := baseWorkload()
		w.ProducerRate = 2000
		w.Warmup = 0
		w.Duration = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := Config{Workload: w, Driver: b.NewDriver()}
		cfg.Progress = func(iv results.Interval) {
			if iv.EndSeconds >= 2 {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
		}
		res, err := Run(ctx, cfg)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run returned %v, want the interrupt", err)
		}
		if res == nil || !res.Partial || !strings.HasPrefix(res.PartialReason, "interrupted") {
			t.Fatalf("results not marked partial: %+v", res)
		}
		m, c := res.Measured, res.Counts
		// Sends due every 0.5 ms from 1 ms to the interrupt at 2.5 s.
		if m.DurationSeconds != 2.5 || c.Sent < 4990 || c.Sent > 5000 || len(res.Intervals) < 3 {
			t.Errorf("measured %.9f s, sent %d, %d intervals: want what the 2.5 s before the interrupt sent", m.DurationSeconds, c.Sent, len(res.Intervals))
		}
		// Without a completed drain nothing may be called lost: whatever
		// was not consumed is undelivered, and every message is
		// accounted for.
		if c.Lost != 0 || c.Consumed+c.Undelivered < c.Acked || c.Sent != c.Acked+c.Failed+c.Unacked {
			t.Errorf("interrupted accounting: %+v", c)
		}
	})
}

// TestIntervalsKeepComingWhileWaiting: 200 clients on a broker 1 s away,
// with 16 messages in flight per producer: the producers wait on the
// broker, the target is missed and the verdict names the broker; the
// measurement lasts exactly its 3 s, and intervals of exactly a second
// keep coming while the acknowledgements and the consumers are waited
// for.
func TestIntervalsKeepComingWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		b.Delay = time.Second
		w := baseWorkload()
		w.Topics, w.PartitionsPerTopic, w.MessageSize = 50, 1, 1024
		w.ProducersPerTopic, w.SubscriptionsPerTopic, w.ConsumersPerSubscription = 1, 3, 1
		w.ProducerRate, w.Warmup, w.Duration = 2000, 2*time.Second, 3*time.Second
		res, err := Run(context.Background(), Config{Workload: w, Driver: b.NewDriver(), MaxInFlightBytes: 16 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if m := res.Measured; m.DurationSeconds != 3 {
			t.Errorf("measured %.9f s, want 3", m.DurationSeconds)
		}
		after := 0
		for i, iv := range res.Intervals {
			if i > 0 && iv.StartSeconds != res.Intervals[i-1].EndSeconds {
				t.Errorf("interval %d starts at %.9f s, the previous ended at %.9f s", i, iv.StartSeconds, res.Intervals[i-1].EndSeconds)
			}
			last := i == len(res.Intervals)-1
			if long := iv.EndSeconds - iv.StartSeconds; long != 1 && !(last && long < 1) {
				t.Errorf("interval %d (%s) lasted %.9f s, want 1", i, iv.Phase, long)
			}
			if iv.Phase == results.Drain {
				after++
			}
		}
		// The 16 messages in flight per producer when the producers stop
		// are acknowledged, and reach the consumers, 2 s later.
		if after < 2 {
			t.Errorf("%d intervals after the measurement, want one a second while acknowledgements and consumers were waited for", after)
		}
		c := res.Counts
		if c.Lost != 0 || c.Duplicated != 0 || c.Failed != 0 || c.Unacked != 0 || c.Sent != c.Acked || c.Consumed != 3*c.Acked {
			t.Errorf("accounting with 200 clients: %+v", c)
		}
		if tg := res.Target; tg == nil || tg.Held || tg.LoadGeneratorBound || !strings.HasPrefix(tg.Limit, "the broker") {
			t.Errorf("target %+v: want missed, limited by the broker", tg)
		}
	})
}

// TestInjectedDelayShowsInLatency: a one-way delay d between the clients
// and the broker adds one round trip, 2d, to every publish latency and
// 2d (to the broker, then to the consumer) to every end-to-end latency,
// exactly.
func TestInjectedDelayShowsInLatency(t *testing.T) {
	const oneWay = 20 * time.Millisecond
	p50 := func(delay time.Duration) (pub, e2e float64) {
		synctest.Test(t, func(t *testing.T) {
			b := memory.NewBroker()
			b.Delay = delay
			w := baseWorkload()
			w.ProducerRate = 1000
			w.Warmup = time.Second
			w.Duration = 5 * time.Second
			res, err := Run(context.Background(), Config{Workload: w, Driver: b.NewDriver()})
			if err != nil {
				t.Fatal(err)
			}
			if c := res.Counts; c.Lost != 0 || c.Acked != c.Sent || c.Consumed != c.Acked {
				t.Errorf("accounting with %s delay: %+v", delay, c)
			}
			m := res.Measured
			if m.PublishLatency.Max != m.PublishLatency.P50 || m.EndToEndLatency.Max != m.EndToEndLatency.P50 {
				t.Errorf("with %s delay, latencies vary: publish %+v, end-to-end %+v", delay, m.PublishLatency, m.EndToEndLatency)
			}
			pub, e2e = m.PublishLatency.P50, m.EndToEndLatency.P50
		})
		return pub, e2e
	}
	base, baseE2E := p50(0)
	delayed, delayedE2E := p50(oneWay)
	want := 2 * float64(oneWay) / 1e6
	if added := delayed - base; !near(added, want) {
		t.Errorf("publish p50 %.3f ms direct, %.3f ms with %s each way: moved %.3f ms, want %.0f", base, delayed, oneWay, added, want)
	}
	if added := delayedE2E - baseE2E; !near(added, want) {
		t.Errorf("end-to-end p50 %.3f ms direct, %.3f ms with %s each way: moved %.3f ms, want %.0f", baseE2E, delayedE2E, oneWay, added, want)
	}
}
