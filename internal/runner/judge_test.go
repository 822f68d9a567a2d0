package runner

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// TestJudgeTargetNamesTheLimit: a missed target names the true limit, and
// only brokerbench's own limits are the load generator's.
func TestJudgeTargetNamesTheLimit(t *testing.T) {
	sys := func(idle, client, broker, other float64) *results.System {
		return &results.System{CPUIdle: idle, ClientCPU: client, BrokerCPU: broker, BrokerSampled: true, OtherCPU: other, Cores: 2}
	}
	type agg = results.Aggregate
	at := func(rate float64, a agg) agg { a.PublishRate = rate; return a }
	lag := func(a agg, p99 float64) agg { a.SendLag = metrics.Latency{P99: p99}; return a }
	sched := func(a agg, p99 float64) agg { a.SchedulingDelay = &metrics.Latency{P99: p99}; return a }
	cases := []struct {
		name      string
		target    float64 // msg/s
		m         agg
		maxLag    time.Duration // 0: the default
		held      bool
		lgBound   bool
		disturbed bool
		limit     string // in Limit
	}{
		{"held", 1000, at(1000, agg{System: sys(50, 20, 40, 0)}), 0, true, false, false, ""},
		{"broker", 1000, at(500, agg{BrokerWaitShare: 0.9, System: sys(50, 20, 40, 0)}), 0, false, false, false, "the broker: producers waited on it 90%"},
		{"broker on a saturated machine", 1000, at(500, agg{BrokerWaitShare: 0.9, System: sys(1, 20, 170, 0)}), 0, false, false, false, "shared a saturated machine"},
		// The broker took most of a saturated machine: its CPU on this
		// machine is the limit, not brokerbench's 21%.
		{"broker saturates the machine", 1000, lag(at(1000, agg{System: sys(0, 21, 122, 10)}), 20), 0, false, false, false, "the broker's CPU on this machine"},
		{"brokerbench saturates the machine", 1000, at(500, agg{BrokerWaitShare: 0.1, System: sys(1, 150, 40, 0)}), 0, false, true, false, "saturated (1.0% idle; brokerbench used 150% of a core, the broker 40%)"},
		{"brokerbench's CPU", 1000, at(500, agg{System: sys(10, 185, 5, 0)}), 0, false, true, false, "brokerbench used 185% of a core, 92% of the machine's 2 cores"},
		// Other processes took 1.4 of 2 cores: the machine was disturbed,
		// and adding producers cannot help.
		{"disturbed", 2500, lag(at(2500, agg{System: sys(0, 25, 35, 140)}), 19), 0, false, false, true, "other processes used 1.4 of 2 cores"},
		{"late samples", 1000, at(500, agg{BrokerWaitShare: 0.1, SampleDelayMaxMs: 900, System: sys(30, 40, 40, 0)}), 0, false, true, false, "sampler ran up to 900 ms late"},
		{"slow producers", 1000, at(500, agg{BrokerWaitShare: 0.1, System: sys(60, 40, 40, 0)}), 0, false, true, false, "add producers"},
		// A broker that refuses connections fails sends at once: the
		// producers never wait, and the broker is still the limit.
		{"failing sends", 1000, at(500, agg{BrokerWaitShare: 0.01, System: sys(60, 10, 10, 0), Traffic: results.Traffic{Sent: 10000, Failed: 4000}}), 0, false, false, false, "the broker: 40.0% of sends failed"},
		{"a few failed sends", 1000, at(500, agg{BrokerWaitShare: 0.1, System: sys(60, 40, 40, 0), Traffic: results.Traffic{Sent: 10000, Failed: 10}}), 0, false, true, false, "add producers"},
		// A node killed: no acknowledgement for 47 s.
		{"outage", 1000, at(196, agg{System: sys(60, 4, 40, 0), Outages: []results.Outage{{AtSeconds: 12, Seconds: 0.3}, {AtSeconds: 13, Seconds: 47.2, InFlight: 28844}}}), 0, false, false, false, "an outage, no acknowledgement for 47.2 s from 13.0 s while 28844 messages were in flight"},
		// The rate held, but producers blocked for seconds behind a dead
		// partition leader: the late sends are the broker's.
		{"long waits", 3020, lag(at(3020, agg{BrokerWaitShare: 0.04, LongestBrokerWaitMs: 5200, System: sys(60, 10, 80, 0)}), 32.8), 0, false, false, false, "up to 5200 ms at once"},
		// Sends as late as the machine's timers: within the default limit.
		{"late as the machine's timers", 1000, sched(lag(at(1000, agg{System: sys(40, 20, 40, 0)}), 25), 20), 0, true, false, false, ""},
		// An explicit limit is not scaled.
		{"explicit limit", 1000, sched(lag(at(1000, agg{System: sys(40, 20, 40, 0)}), 25), 20), 10 * time.Millisecond, false, true, false, "schedule"},
		{"late sends, nothing saturated", 1000, sched(lag(at(1000, agg{System: sys(40, 20, 40, 0)}), 50), 2), 0, false, true, false, "scheduling delay p99 2.000 ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			m.DurationSeconds = 10
			tg := JudgeTarget(&m, TargetSpec{Rate: tc.target, MaxSendLag: tc.maxLag, Interval: time.Second})
			if tg.Held != tc.held || tg.LoadGeneratorBound != tc.lgBound || tg.Disturbed != tc.disturbed || !strings.Contains(tg.Limit, tc.limit) {
				t.Errorf("JudgeTarget = %+v, want held %v, load-generator-bound %v, disturbed %v, limit with %q", tg, tc.held, tc.lgBound, tc.disturbed, tc.limit)
			}
		})
	}
}

// ackStallDriver wraps a driver so that no acknowledgement reaches the
// producers between from and to after the first producer was made: a
// broker that stops answering, as one whose partition leader was killed.
type ackStallDriver struct {
	driver.Driver
	from, to time.Duration
	start    time.Time
}

func (d *ackStallDriver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if d.start.IsZero() {
		d.start = time.Now()
	}
	return d.Driver.NewProducer(ctx, spec, func(m *driver.Message, err error) {
		if since := time.Since(d.start); since >= d.from && since < d.to {
			time.Sleep(d.to - since) // acknowledgements wait, in order
		}
		ack(m, err)
	})
}

func (d *ackStallDriver) Written(ctx context.Context, topic string) (int64, error) {
	return d.Driver.(driver.WrittenCounter).Written(ctx, topic)
}

// TestBrokerStallNamesTheBroker: a broker that acknowledges nothing for
// 2.5 s of a 10 s measurement, with the producers blocked on their full
// in-flight windows to the end of intervals, is the limit of the missed
// target, with the outage's length; never the load generator.
func TestBrokerStallNamesTheBroker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		w := baseWorkload()
		w.ProducerRate = 2000
		w.Warmup, w.Duration = time.Second, 10*time.Second
		d := &ackStallDriver{Driver: b.NewDriver(), from: 4 * time.Second, to: 6500 * time.Millisecond}
		res, err := Run(context.Background(), Config{Workload: w, Driver: d, MaxInFlightBytes: 100 * 100})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Measured
		var longest results.Outage
		for _, o := range m.Outages {
			if o.Seconds > longest.Seconds {
				longest = o
			}
		}
		if longest.Seconds < 2.4 || longest.Seconds > 2.6 || longest.AtSeconds < 3.9 || longest.AtSeconds > 4.1 || longest.InFlight != 100 {
			t.Errorf("outages %+v: want one of 2.5 s from 4 s with the 100-message window in flight", m.Outages)
		}
		if m.LongestBrokerWaitMs < 2300 {
			t.Errorf("longest wait %.0f ms: the producer waited about 2.5 s for a free slot", m.LongestBrokerWaitMs)
		}
		tg := res.Target
		if tg == nil || tg.Held || tg.LoadGeneratorBound || !strings.Contains(tg.Limit, "the broker: an outage, no acknowledgement for 2.5 s") {
			t.Fatalf("target %+v: want missed, limited by the broker's outage", tg)
		}
		if v := results.Judge(res); v.Kind != results.TargetNotHeld || !strings.Contains(v.Reason, "outage") {
			t.Errorf("verdict %+v", v)
		}
		if c := res.Counts; c.Lost != 0 || c.Acked != c.Sent {
			t.Errorf("accounting %+v: a stall loses nothing", c)
		}
	})
}

// slowConsumerDriver wraps a driver so that each delivery takes perMessage
// of the consumer's time.
type slowConsumerDriver struct {
	driver.Driver
	perMessage time.Duration
}

func (d *slowConsumerDriver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	return d.Driver.NewConsumer(ctx, spec, func(dv *driver.Delivery) {
		time.Sleep(d.perMessage)
		consume(dv)
	})
}

// TestConsumersBehindIsAVerdict: consumers that take 1 ms a message fall
// behind 2000 msg/s, and the run says so with its own verdict, even
// though the producers held their rate; consumers that keep up do not.
func TestConsumersBehindIsAVerdict(t *testing.T) {
	for _, tc := range []struct {
		perMessage time.Duration
		behind     bool
	}{{time.Millisecond, true}, {200 * time.Microsecond, false}} {
		t.Run(tc.perMessage.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := memory.NewBroker()
				w := baseWorkload()
				w.ProducerRate = 2000
				w.PartitionsPerTopic = 1
				w.Warmup, w.Duration = time.Second, 5*time.Second
				d := &slowConsumerDriver{Driver: b.NewDriver(), perMessage: tc.perMessage}
				res, err := Run(context.Background(), Config{Workload: w, Driver: d, DrainTimeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				m := res.Measured
				if tg := res.Target; tg == nil || !tg.Held {
					t.Errorf("target %+v: the producers held their rate", tg)
				}
				v := results.Judge(res)
				if !tc.behind {
					if m.ConsumersBehind != "" || v.Kind != results.OK {
						t.Errorf("consumers keeping up judged %+v (%s)", v, m.ConsumersBehind)
					}
					return
				}
				if math.Abs(m.BacklogGrowth-1000) > 50 {
					t.Errorf("backlog growth %.0f msg/s, want about 1000", m.BacklogGrowth)
				}
				if v.Kind != results.ConsumerBound || !strings.Contains(v.Reason, "they received 1000 msg/s for the 2000 msg/s published") {
					t.Errorf("verdict %+v: want consumer-bound at 1000 of 2000 msg/s", v)
				}
				if c := res.Counts; c.Lost != 0 || c.Consumed != c.Acked {
					t.Errorf("accounting %+v: the drain catches up", c)
				}
			})
		})
	}
}
