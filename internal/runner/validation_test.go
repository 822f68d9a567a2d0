package runner

// Validation tests: known faults are injected between the runner and a real
// broker, and the reported numbers must show exactly what was injected.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// lossyDriver wraps a real driver so that its producers acknowledge every
// skipEvery-th message without sending it: a broker that acknowledges
// messages and then loses them.
type lossyDriver struct {
	driver.Driver
	skipEvery uint64
	skipped   atomic.Int64
}

func (d *lossyDriver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	lp := &lossyProducer{d: d}
	// The driver contract forbids concurrent acknowledgements for one
	// producer; the skipped messages are acknowledged from Send, so all
	// acknowledgements go through one lock.
	lp.ack = func(m *driver.Message, err error) {
		lp.mu.Lock()
		defer lp.mu.Unlock()
		ack(m, err)
	}
	p, err := d.Driver.NewProducer(ctx, spec, lp.ack)
	lp.Producer = p
	return lp, err
}

func (d *lossyDriver) WaitSubscription(ctx context.Context, topic, sub string, members int) error {
	return d.Driver.(driver.SubscriptionWaiter).WaitSubscription(ctx, topic, sub, members)
}

func (d *lossyDriver) Written(ctx context.Context, topic string) (int64, error) {
	return d.Driver.(driver.WrittenCounter).Written(ctx, topic)
}

// Reread passes the real driver's re-read on: the skipped messages were
// never sent, so the broker does not hold them, and the loss is proven.
func (d *lossyDriver) Reread(ctx context.Context, topic, sub string, found func([]byte)) error {
	return d.Driver.(driver.Rereader).Reread(ctx, topic, sub, found)
}

type lossyProducer struct {
	driver.Producer
	d   *lossyDriver
	mu  sync.Mutex
	ack driver.AckFunc
}

func (p *lossyProducer) Send(ctx context.Context, m *driver.Message) {
	h, err := payload.Parse(m.Value)
	if err == nil && h.Seq%p.d.skipEvery == p.d.skipEvery-1 {
		p.d.skipped.Add(1)
		p.ack(m, nil)
		return
	}
	p.Producer.Send(ctx, m)
}

// TestSkippedMessagesAreCountedLost: messages acknowledged but never sent
// must show up as exactly that many lost, per subscription, and the broker's
// stored count must disagree with the acknowledged count by the same number.
func TestSkippedMessagesAreCountedLost(t *testing.T) {
	w := baseWorkload()
	w.Warmup = 0
	w.MessageLimit = 60_000
	w.ProducersPerTopic = 2
	w.SubscriptionsPerTopic = 2
	w.KeyDistributor = payload.RoundRobin
	d := &lossyDriver{Driver: newKafka(t, workload.Property{Key: "acks", Value: "1"}), skipEvery: 1000}
	res, err := Run(context.Background(), Config{Workload: w, Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	skipped := d.skipped.Load()
	c := res.Counts
	t.Logf("skipped %d; accounting %+v", skipped, c)
	if skipped != 60 {
		t.Fatalf("the test producer skipped %d messages, want 60", skipped)
	}
	if c.Lost != 2*skipped || c.Duplicated != 0 || c.OutOfOrder != 0 || c.Unexpected != 0 {
		t.Errorf("lost %d (want %d = skipped x 2 subscriptions), duplicated %d, out of order %d, unexpected %d",
			c.Lost, 2*skipped, c.Duplicated, c.OutOfOrder, c.Unexpected)
	}
	for _, s := range c.Subscriptions {
		if s.Lost != skipped || s.Expected != c.Acked || s.Delivered != c.Acked-skipped {
			t.Errorf("subscription %+v: want %d lost of %d expected", s, skipped, c.Acked)
		}
		// Proven: the topic read again from its start holds every
		// message sent, and none of the skipped.
		if rr := s.Reread; rr == nil || !rr.Complete || rr.Missing != skipped || rr.Found != 0 || rr.Read != c.Acked-skipped {
			t.Errorf("subscription %s: re-read %+v; want complete, %d missing, none found, %d read", s.Name, rr, skipped, c.Acked-skipped)
		}
	}
	if c.StoredByBroker == nil || *c.StoredByBroker != c.Acked-skipped {
		t.Errorf("broker stores %v, want acked %d - skipped %d", c.StoredByBroker, c.Acked, skipped)
	}
}

// stallingDriver wraps a driver so that the Sends whose ordinals (counted
// from 1) stalls reports block for stall before sending: a client library
// that blocks the caller.
type stallingDriver struct {
	driver.Driver
	stalls func(n int) bool
	stall  time.Duration
}

// every is a stallingDriver.stalls that picks every nth Send.
func every(n int) func(int) bool { return func(i int) bool { return i%n == 0 } }

func (d *stallingDriver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	p, err := d.Driver.NewProducer(ctx, spec, ack)
	return &stallingProducer{Producer: p, d: d}, err
}

type stallingProducer struct {
	driver.Producer
	d     *stallingDriver
	sends int
}

func (p *stallingProducer) Send(ctx context.Context, m *driver.Message) {
	if p.sends++; p.d.stalls(p.sends) {
		time.Sleep(p.d.stall)
	}
	p.Producer.Send(ctx, m)
}

// TestSendLagLimit: a producer held up in Send catches up (so the rate is
// achieved) but its messages leave late; with a send lag limit below the
// lateness the run must not count as holding its target, and its latency
// must include the lateness.
func TestSendLagLimit(t *testing.T) {
	w := baseWorkload()
	w.ProducerRate = 2000
	w.Warmup = 0
	w.Duration = 3 * time.Second
	w.SubscriptionsPerTopic = 0
	// Every 200th send blocks 15 ms: the next ~30 messages leave up to 15 ms
	// late, 15% of all, and the producer has time to catch up.
	d := &stallingDriver{Driver: newKafka(t), stalls: every(200), stall: 15 * time.Millisecond}
	res, err := Run(context.Background(), Config{Workload: w, Driver: d, MaxSendLag: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Measured
	t.Logf("rate %.0f, send lag p50 %.2f p99 %.2f ms, publish p99 %.2f ms, target %+v", m.PublishRate, m.SendLag.P50, m.SendLag.P99, m.PublishLatency.P99, res.Target)
	if res.Target == nil || res.Target.Held || !strings.Contains(res.Target.Reason, "send lag") {
		t.Errorf("target %+v: want not held because of send lag", res.Target)
	}
	if m.SendLag.P99 < 5 || m.PublishLatency.P99 < m.SendLag.P99 {
		t.Errorf("send lag p99 %.2f ms, publish p99 %.2f ms: the lateness must show in both", m.SendLag.P99, m.PublishLatency.P99)
	}
}

// TestBrokerStallShowsInLatency freezes the broker (SIGSTOP) for about 2 s
// during a fixed-rate run. Latency is measured from the intended send time,
// so the message due just after the freeze waits at least the whole pause:
// the maximum must be at least the pause minus one send interval, and the
// k-th largest latency at least the pause minus k send intervals, which
// bounds p99.9 from below. The run must still account for every message.
func TestBrokerStallShowsInLatency(t *testing.T) {
	broker := lazyBroker.Get(t)
	const rate = 2000.0
	w := baseWorkload()
	w.ProducerRate = rate
	w.Warmup = time.Second
	w.Duration = 8 * time.Second
	d := newKafka(t, workload.Property{Key: "acks", Value: "all"}, workload.Property{Key: "linger.ms", Value: "1"})
	var pause time.Duration
	stallDone := make(chan error, 1)
	cfg := Config{Workload: w, Driver: d}
	var once sync.Once
	cfg.Progress = func(iv results.Interval) {
		// Freeze the broker 3 s into the run, in the measurement phase.
		if iv.EndSeconds < 2.5 {
			return
		}
		once.Do(func() {
			go func() {
				time.Sleep(500 * time.Millisecond)
				if err := broker.Pause(); err != nil {
					stallDone <- err
					return
				}
				start := time.Now()
				time.Sleep(2 * time.Second)
				pause = time.Since(start)
				stallDone <- broker.Resume()
			}()
		})
	}
	res, err := Run(context.Background(), cfg)
	if serr := <-stallDone; serr != nil {
		t.Fatal(serr)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, c := res.Measured, res.Counts
	pauseMs := float64(pause) / 1e6
	interval := 1000 / rate // ms between intended sends
	t.Logf("paused %.1f ms; publish max %.1f p99.9 %.1f p99 %.1f; e2e max %.1f p99.9 %.1f; accounting %+v",
		pauseMs, m.PublishLatency.Max, m.PublishLatency.P999, m.PublishLatency.P99, m.EndToEndLatency.Max, m.EndToEndLatency.P999, c)
	for name, l := range map[string]struct{ max, p999 float64 }{
		"publish":    {m.PublishLatency.Max, m.PublishLatency.P999},
		"end-to-end": {m.EndToEndLatency.Max, m.EndToEndLatency.P999},
	} {
		if l.max < pauseMs-interval {
			t.Errorf("%s max %.1f ms is below the %.1f ms pause", name, l.max, pauseMs)
		}
		k := math.Ceil(0.001 * float64(m.Acked))
		if bound := pauseMs - k*interval; l.p999 < bound {
			t.Errorf("%s p99.9 %.1f ms is below %.1f ms (pause %.1f minus %.0f send intervals)", name, l.p999, bound, pauseMs, k)
		}
	}
	if c.Sent != c.Acked || c.Failed != 0 || c.Lost != 0 || c.Duplicated != 0 || c.Consumed != c.Acked {
		t.Errorf("accounting after the stall: %+v", c)
	}
	if c.StoredByBroker == nil || *c.StoredByBroker != c.Acked {
		t.Errorf("broker stores %v, acked %d", c.StoredByBroker, c.Acked)
	}
}

// TestProxyDelayBoundsKafkaLatency puts a delaying proxy between the
// client and a broker that advertises the proxy's address, so every
// request and response crosses it. With a one-way delay d, no message can
// be acknowledged sooner than one round trip, 2d, after it was due, nor
// reach the consumer sooner than 2d (to the broker, then back in a fetch
// response): the lowest publish and end-to-end latency must be at least
// 2d, however fast or busy the machine. How much a delay adds exactly is
// TestInjectedDelayShowsInLatency's.
func TestProxyDelayBoundsKafkaLatency(t *testing.T) {
	testbroker.Need(t, testbroker.Kafka)
	const brokerPort, proxyPort = 29195, 29197 // the broker's controller takes 29196
	const oneWay = 20 * time.Millisecond
	proxyAddr := fmt.Sprintf("127.0.0.1:%d", proxyPort)
	setDelay := delayProxy(t, proxyAddr, fmt.Sprintf("127.0.0.1:%d", brokerPort))
	b, err := testbroker.StartCluster(brokerPort, 1, func(c *local.Cluster) { c.Kind = kafka.Kind{AdvertisedPort: proxyPort} })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	d, err := kafka.New(&workload.DriverConfig{Name: "kafka", Source: "test", ReplicationFactor: 1,
		Producer: []workload.Property{{Key: "acks", Value: "1"}}}, driver.Options{Endpoints: []string{proxyAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	w := baseWorkload()
	w.ProducerRate = 1000
	w.Warmup = time.Second
	w.Duration = 3 * time.Second
	setDelay(oneWay)
	res, err := Run(context.Background(), Config{Workload: w, Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Counts; c.Acked == 0 || c.Lost != 0 || c.Acked != c.Sent || c.Consumed != c.Acked {
		t.Errorf("accounting through the proxy: %+v", c)
	}
	roundTrip := 2 * float64(oneWay) / 1e6
	for name, enc := range map[string]string{"publish": res.Histograms.PublishLatency, "end-to-end": res.Histograms.EndToEndLatency} {
		h, err := metrics.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		lowest := float64(h.Min()) / 1000
		t.Logf("%s latency with %s each way: lowest %.2f ms, p50 %.2f ms", name, oneWay, lowest, float64(h.ValueAtQuantile(50))/1000)
		if h.TotalCount() == 0 || lowest < roundTrip-histogramStep {
			t.Errorf("%s latency: lowest %.2f ms of %d, below the %.0f ms round trip through the proxy", name, lowest, h.TotalCount(), roundTrip)
		}
	}
}

// delayProxy starts a toxiproxy proxy from listen to upstream, as the link
// proxy of local clusters does, and returns a function that sets its
// one-way delay in each direction.
func delayProxy(t *testing.T, listen, upstream string) func(time.Duration) {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "client", listen, upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return func(d time.Duration) {
		for _, stream := range []string{"upstream", "downstream"} {
			name := "delay-" + stream
			if p.Toxics.GetToxic(name) != nil {
				if err := p.Toxics.RemoveToxic(context.Background(), name); err != nil {
					t.Fatal(err)
				}
			}
			if d == 0 {
				continue
			}
			spec := fmt.Sprintf(`{"name": %q, "type": "latency", "stream": %q, "attributes": {"latency": %d}}`, name, stream, d.Milliseconds())
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(spec)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBacklogBuildAndDrain: consumers are paused until 5 MB per subscription
// have piled up, then resumed while producers keep their rate. The build
// must take about target / rate, the drain must consume faster than the
// producers publish, messages held in the backlog must show their wait in
// end-to-end latency, and nothing may be lost. The rates are those the
// producers achieved in each phase, which a busy machine lowers.
func TestBacklogBuildAndDrain(t *testing.T) {
	const rate, size = 20000.0, 100
	w := baseWorkload()
	w.ProducerRate = rate
	w.MessageSize = size
	w.ConsumerBacklogSizeGB = 5e6 / (1 << 30)
	w.SubscriptionsPerTopic = 2
	d := newKafka(t, workload.Property{Key: "acks", Value: "1"})
	res, err := Run(context.Background(), Config{Workload: w, Driver: d, BacklogTimeout: 30 * time.Second, MaxSendLag: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, c := res.Backlog, res.Counts
	if b == nil {
		t.Fatal("no backlog section in the results")
	}
	t.Logf("backlog %+v; e2e max %.1f ms; accounting lost %d dup %d", *b, res.Measured.EndToEndLatency.Max, c.Lost, c.Duplicated)
	wantMsgs := int64(math.Round(5e6 / size))
	if !b.Built || !b.Drained || b.TargetMessages != wantMsgs || b.PeakMessages < wantMsgs {
		t.Errorf("backlog %+v: want built to %d and drained", *b, wantMsgs)
	}
	// sendRate is the rate the producers sent at in a phase.
	sendRate := func(p results.Phase) float64 {
		var sent int64
		secs := 0.0
		for _, iv := range res.Intervals {
			if iv.Phase == p {
				sent, secs = sent+iv.Sent, secs+iv.EndSeconds-iv.StartSeconds
			}
		}
		return float64(sent) / secs
	}
	build, drain := sendRate(results.BacklogBuild), sendRate(results.BacklogDrain)
	if want := float64(wantMsgs) / build; b.BuildSeconds < want*0.9 || b.BuildSeconds > want+1.5 {
		t.Errorf("build took %.2f s, want about %.2f s (target / the %.0f msg/s sent meanwhile)", b.BuildSeconds, want, build)
	}
	if b.DrainRate <= 2*drain {
		t.Errorf("drain rate %.0f msg/s over 2 subscriptions does not exceed the publish rate %.0f x 2", b.DrainRate, drain)
	}
	if maxE2E := res.Measured.EndToEndLatency.Max; maxE2E < 0.8*b.BuildSeconds*1000 {
		t.Errorf("e2e max %.0f ms: messages waited the %.2f s build in the backlog", maxE2E, b.BuildSeconds)
	}
	if c.Lost != 0 || c.Duplicated != 0 || c.Consumed != 2*c.Acked {
		t.Errorf("accounting %+v", c)
	}
	var phases []string
	for _, iv := range res.Intervals {
		if len(phases) == 0 || phases[len(phases)-1] != string(iv.Phase) {
			phases = append(phases, string(iv.Phase))
		}
	}
	if strings.Join(phases, ",") != "backlog-build,backlog-drain,drain" {
		t.Errorf("phases %v", phases)
	}
}

// redeliveringDriver wraps a real driver so that its consumers receive
// every message twice at once, except every holdEvery-th message, which
// arrives once, hold later: redeliveries come early, some first
// deliveries late, as after a consumer rebalance.
type redeliveringDriver struct {
	driver.Driver
	holdEvery uint64
	hold      time.Duration
}

func (d *redeliveringDriver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	var mu sync.Mutex // deliveries stay serial, as the contract requires
	deliver := func(dv *driver.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		consume(dv)
	}
	return d.Driver.NewConsumer(ctx, spec, func(dv *driver.Delivery) {
		h, err := payload.Parse(dv.Value)
		if err == nil && h.Seq%d.holdEvery == 0 {
			late := driver.Delivery{Value: append([]byte(nil), dv.Value...), Lane: dv.Lane}
			time.AfterFunc(d.hold, func() { deliver(&late) })
			return
		}
		deliver(dv)
		deliver(dv)
	})
}

func (d *redeliveringDriver) WaitSubscription(ctx context.Context, topic, sub string, members int) error {
	return d.Driver.(driver.SubscriptionWaiter).WaitSubscription(ctx, topic, sub, members)
}

func (d *redeliveringDriver) Written(ctx context.Context, topic string) (int64, error) {
	return d.Driver.(driver.WrittenCounter).Written(ctx, topic)
}

// TestRedeliveriesDoNotEndTheDrain: the drain waits for every message to
// arrive once; redeliveries, however many, do not stand in for messages
// still on their way, which would then be counted lost.
func TestRedeliveriesDoNotEndTheDrain(t *testing.T) {
	w := baseWorkload()
	w.Warmup, w.MessageLimit = 0, 20_000
	d := &redeliveringDriver{Driver: newKafka(t), holdEvery: 500, hold: 2 * time.Second}
	res, err := Run(context.Background(), Config{Workload: w, Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	held := int64(20_000 / 500)
	if c.Lost != 0 || c.Undelivered != 0 || c.Acked != 20_000 || c.Duplicated != c.Acked-held || c.Subscriptions[0].Delivered != c.Acked {
		t.Errorf("accounting %+v: want all 20000 delivered, %d duplicated, none lost", c, c.Acked-held)
	}
}
