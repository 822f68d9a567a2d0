package runner

import (
	"context"
	"math"
	"strings"
	"sync"
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
		// Many short waits in a row made the sends late: the broker's,
		// though no wait alone reached the limit.
		{"lateness built up in short waits", 5000, sched(lag(at(5000, agg{BrokerWaitShare: 0.19, LongestBrokerWaitMs: 5.7, LateBehindBrokerShare: 0.8, System: sys(30, 30, 80, 0)}), 30), 2), 0, false, false, false, "80% of the sends' lateness built up while producers waited on it"},
		// Lateness that built up mostly between waits is not the broker's.
		{"lateness mostly between waits", 5000, sched(lag(at(5000, agg{BrokerWaitShare: 0.19, LongestBrokerWaitMs: 5.7, LateBehindBrokerShare: 0.3, System: sys(30, 30, 80, 0)}), 30), 2), 0, false, true, false, "schedule"},
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

// haltingConsumerDriver wraps a driver whose consumers take the first after
// messages, then hold the next one until closed, as a link that was
// given no more credit does.
type haltingConsumerDriver struct {
	driver.Driver
	after int
}

type haltingConsumer struct {
	driver.Consumer
	stop    chan struct{}
	closing sync.Once
}

func (c *haltingConsumer) Close() {
	c.closing.Do(func() { close(c.stop) })
	c.Consumer.Close()
}

func (d *haltingConsumerDriver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	stop := make(chan struct{})
	taken := 0
	c, err := d.Driver.NewConsumer(ctx, spec, func(dv *driver.Delivery) {
		if taken == d.after {
			<-stop
			return
		}
		taken++
		consume(dv)
	})
	if err != nil {
		return nil, err
	}
	return &haltingConsumer{Consumer: c, stop: stop}, nil
}

// TestStalledDeliveryIsNamed: consumers that stop receiving altogether
// are judged consumer-bound with a reason that says delivery stalled
// through the drain, not that they were slow; a drain that delivers to
// its end, or ends with nothing left, is no stall.
func TestStalledDeliveryIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.NewBroker()
		w := baseWorkload()
		w.ProducerRate = 2000
		w.PartitionsPerTopic = 1
		w.Warmup, w.Duration = time.Second, 5*time.Second
		d := &haltingConsumerDriver{Driver: b.NewDriver(), after: 3000}
		res, err := Run(context.Background(), Config{Workload: w, Driver: d, DrainTimeout: 10 * time.Second})
		if res == nil {
			t.Fatalf("no results: %v", err)
		}
		v := results.Judge(res)
		if v.Kind != results.ConsumerBound || !strings.Contains(v.Reason, "delivery stalled") || strings.Contains(v.Reason, "add consumers") {
			t.Errorf("verdict %+v: want consumer-bound, delivery stalled, no advice to add consumers", v)
		}
		if c := res.Counts; c.Consumed != 3000 || c.Lost != 0 {
			t.Errorf("accounting %+v: 3000 consumed, nothing lost", c)
		}
	})

	iv := func(phase results.Phase, start float64, consumed, backlog int64) results.Interval {
		i := results.Interval{StartSeconds: start, EndSeconds: start + 1, Phase: phase, Backlog: backlog}
		i.Consumed = consumed
		return i
	}
	quiet := func(from, n int, backlog int64) []results.Interval {
		var ivs []results.Interval
		for s := from; s < from+n; s++ {
			ivs = append(ivs, iv(results.Drain, float64(s), 0, backlog))
		}
		return ivs
	}
	measure := []results.Interval{iv(results.Measure, 0, 10, 100), iv(results.Measure, 1, 10, 200)}
	for _, c := range []struct {
		name    string
		ivs     []results.Interval
		stalled bool
		secs    float64
	}{
		{"quiet through the drain", append(append([]results.Interval{}, measure...), quiet(2, 6, 200)...), true, 6},
		{"quiet after delivering", append(append(append([]results.Interval{}, measure...), iv(results.Drain, 2, 50, 150)), quiet(3, 5, 150)...), true, 5},
		{"quiet too briefly", append(append([]results.Interval{}, measure...), quiet(2, 4, 200)...), false, 0},
		{"delivering at the end", append(append(append([]results.Interval{}, measure...), quiet(2, 6, 200)...), iv(results.Drain, 8, 10, 190)), false, 0},
		{"nothing left", append(append([]results.Interval{}, measure...), quiet(2, 6, 0)...), false, 0},
		{"no drain", measure, false, 0},
	} {
		secs, _, stalled := deliveryStalled(c.ivs)
		if stalled != c.stalled || stalled && secs != c.secs {
			t.Errorf("%s: stalled %v for %.0f s, want %v for %.0f s", c.name, stalled, secs, c.stalled, c.secs)
		}
	}
}
