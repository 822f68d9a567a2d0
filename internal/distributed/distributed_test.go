package distributed

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// startWorkers serves n workers whose drivers share broker.
func startWorkers(t *testing.T, n int, broker *memory.Broker) ([]string, []*Worker) {
	t.Helper()
	var urls []string
	var workers []*Worker
	for range n {
		w := &Worker{Connect: func(context.Context, DriverSource) (driver.Driver, error) { return broker.NewDriver(), nil }, AbandonAfter: 5 * time.Second}
		srv := httptest.NewServer(w.Handler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
		workers = append(workers, w)
	}
	return urls, workers
}

func testWorkload() *workload.Workload {
	return &workload.Workload{
		Name: "spread", Topics: 2, PartitionsPerTopic: 4, MessageSize: 100, PayloadRandomRatio: 1, PayloadPoolSize: 10,
		KeyDistributor: payload.NoKey, ProducersPerTopic: 2, SubscriptionsPerTopic: 2, ConsumersPerSubscription: 2,
		ProducerRate: 4000, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond, Seed: 1,
	}
}

// TestSpreadRunMergesExactly spreads a workload over three workers: every
// message is produced on one worker and may be consumed on another, and
// the merged results must account for each exactly, with every worker's
// histograms summing to the merged ones.
func TestSpreadRunMergesExactly(t *testing.T) {
	broker := memory.NewBroker()
	urls, _ := startWorkers(t, 3, broker)
	w := testWorkload()
	res, err := Run(context.Background(), Config{
		Run:     runner.Config{Workload: w, Driver: broker.NewDriver(), MaxSendLag: -1, Interval: 250 * time.Millisecond},
		Workers: urls, Placement: Spread,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if res.Partial || c.Sent == 0 || c.Acked != c.Sent || c.Lost != 0 || c.Duplicated != 0 || c.Unexpected != 0 || c.Undelivered != 0 {
		t.Fatalf("accounting: partial=%v %+v warnings %v", res.Partial, c, res.Warnings)
	}
	if len(c.Subscriptions) != 4 {
		t.Fatalf("%d subscriptions, want 4", len(c.Subscriptions))
	}
	var delivered, expected int64
	for _, s := range c.Subscriptions {
		delivered += s.Delivered
		expected += s.Expected
		if s.Delivered != s.Expected {
			t.Errorf("subscription %s: %d delivered, %d expected", s.Name, s.Delivered, s.Expected)
		}
	}
	// Two subscriptions per topic: every message twice.
	if delivered != 2*c.Acked || expected != 2*c.Acked || c.Consumed != 2*c.Acked {
		t.Errorf("delivered %d, expected %d, consumed %d, want twice %d", delivered, expected, c.Consumed, c.Acked)
	}
	if c.StoredByBroker == nil || *c.StoredByBroker != c.Acked {
		t.Errorf("stored %v, acked %d", c.StoredByBroker, c.Acked)
	}
	d := res.Distributed
	if d == nil || len(d.Workers) != 3 {
		t.Fatalf("distribution: %+v", d)
	}
	var acked, measuredAcked int64
	var rate float64
	for _, wk := range d.Workers {
		if wk.Producers == 0 || wk.Consumers == 0 || wk.Measured.Acked == 0 || wk.Error != "" {
			t.Errorf("worker %s: %+v", wk.Address, wk)
		}
		measuredAcked += wk.Measured.Acked
		rate += wk.Measured.PublishRate
	}
	if measuredAcked != res.Measured.Acked || math.Abs(rate-res.Measured.PublishRate) > 1e-6 {
		t.Errorf("workers measured %d acks at %.1f msg/s, merged %d at %.1f", measuredAcked, rate, res.Measured.Acked, res.Measured.PublishRate)
	}
	// The rate split exactly: the merged rate is the target's, where the
	// workers kept their schedules (a busy machine may not let them: the
	// sends then left late, which the send lag shows).
	if off := math.Abs(res.Measured.PublishRate-4000) / 4000; off > 0.05 {
		if res.Measured.SendLag.P99 < 50 {
			t.Errorf("merged publish rate %.1f with sends on time (send lag p99 %.1f ms), want about 4000", res.Measured.PublishRate, res.Measured.SendLag.P99)
		} else {
			t.Logf("merged publish rate %.1f: this machine could not keep the schedule (send lag p99 %.1f ms)", res.Measured.PublishRate, res.Measured.SendLag.P99)
		}
	}
	for _, iv := range res.Intervals {
		acked += iv.Acked
	}
	if acked != c.Acked {
		t.Errorf("merged intervals sum to %d acks, total %d", acked, c.Acked)
	}
	if d.StartSpreadMs < 0 || d.StartSpreadMs > 200 {
		t.Errorf("start spread %.3f ms", d.StartSpreadMs)
	}
	if res.Measured.EndToEndLatency.Count != res.Measured.Consumed || res.Measured.PublishLatency.Count != res.Measured.Acked {
		t.Errorf("merged latencies do not cover the merged counts: %+v", res.Measured)
	}
}

// TestByTopicKeepsMessagesOnTheirWorker: with placement by topic, each
// worker consumes only what it sent, so end-to-end latency carries no
// clock error.
func TestByTopicKeepsMessagesOnTheirWorker(t *testing.T) {
	broker := memory.NewBroker()
	urls, _ := startWorkers(t, 2, broker)
	res, err := Run(context.Background(), Config{
		Run:     runner.Config{Workload: testWorkload(), Driver: broker.NewDriver(), MaxSendLag: -1, Interval: 250 * time.Millisecond},
		Workers: urls, Placement: ByTopic,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Distributed
	if d.EndToEndClockErrorMs != 0 {
		t.Errorf("end-to-end clock error %.3f ms with placement by topic", d.EndToEndClockErrorMs)
	}
	for _, wk := range d.Workers {
		// Each worker's two subscriptions get its own messages, and no
		// other worker's: twice what it sent, give or take the
		// measurement's edges, where a busy machine may move a backlog
		// of the warm-up into the measurement or one of the measurement
		// into the drain. A worker that got the other's messages as
		// well would consume about four times what it sent.
		if wk.Measured.Consumed > 2*wk.Measured.Acked*5/4+50 {
			t.Errorf("worker %s consumed %d, more than its %d acknowledged messages x 2", wk.Address, wk.Measured.Consumed, wk.Measured.Acked)
		}
	}
	if c := res.Counts; c.Lost != 0 || c.Acked != c.Sent || c.Consumed != 2*c.Acked {
		t.Errorf("accounting %+v", c)
	}
}

// TestMessageLimitSplitsExactly: a message limit is split over producers
// on different workers, and the run ends when all have sent theirs.
func TestMessageLimitSplitsExactly(t *testing.T) {
	broker := memory.NewBroker()
	urls, _ := startWorkers(t, 2, broker)
	w := testWorkload()
	w.ProducersPerTopic, w.MessageLimit, w.ProducerRate, w.Duration = 3, 10001, 0, time.Minute
	start := time.Now()
	res, err := Run(context.Background(), Config{Run: runner.Config{Workload: w, Driver: broker.NewDriver()}, Workers: urls})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Sent != 10001 || res.Counts.Acked != 10001 || res.Counts.Lost != 0 || res.Counts.Consumed != 2*10001 {
		t.Errorf("counts %+v", res.Counts)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the run took %s: it did not end when the producers finished", time.Since(start))
	}
}

// TestBacklogIsTheRuns: one worker sends, the other consumes. The backlog
// is the run's (all sends times subscriptions, less all deliveries), not
// a sum of workers' backlogs, which would count every message sent as
// waiting forever. Drained, it is 0.
func TestBacklogIsTheRuns(t *testing.T) {
	broker := memory.NewBroker()
	urls, _ := startWorkers(t, 2, broker)
	w := testWorkload()
	w.Topics, w.ProducersPerTopic, w.SubscriptionsPerTopic, w.ConsumersPerSubscription = 1, 1, 1, 1
	w.MessageLimit, w.ProducerRate, w.Duration = 5000, 0, time.Minute
	res, err := Run(context.Background(), Config{Run: runner.Config{Workload: w, Driver: broker.NewDriver(), Interval: 100 * time.Millisecond}, Workers: urls})
	if err != nil {
		t.Fatal(err)
	}
	if res.Distributed.Workers[0].Consumers != 0 || res.Distributed.Workers[1].Producers != 0 {
		t.Fatalf("placement %+v: want the producer on one worker, the consumer on the other", res.Distributed.Workers)
	}
	if last := res.Intervals[len(res.Intervals)-1]; last.Backlog != 0 || res.Counts.Consumed != 5000 {
		t.Errorf("backlog %d after the drain (consumed %d)", last.Backlog, res.Counts.Consumed)
	}
}

// TestWorkerRefusals: what a coordinator cannot do is refused before any
// load starts.
func TestWorkerRefusals(t *testing.T) {
	broker := memory.NewBroker()
	urls, _ := startWorkers(t, 3, broker)
	w := testWorkload()
	w.ProducersPerTopic, w.SubscriptionsPerTopic, w.ConsumersPerSubscription, w.Topics = 1, 1, 1, 1
	_, err := Run(context.Background(), Config{Run: runner.Config{Workload: w, Driver: broker.NewDriver()}, Workers: urls})
	if err == nil || !strings.Contains(err.Error(), "would run nothing") {
		t.Errorf("3 workers for 1 producer and 1 consumer: %v", err)
	}
	_, err = Run(context.Background(), Config{Run: runner.Config{Workload: testWorkload(), Driver: broker.NewDriver()}, Workers: []string{"http://127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("unreachable worker: %v", err)
	}
	// A busy worker.
	busy := &Worker{Connect: func(ctx context.Context, _ DriverSource) (driver.Driver, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	srv := httptest.NewServer(busy.Handler())
	defer srv.Close()
	a := Assignment{RunID: "x", Workload: testWorkload(), Topics: []string{"a", "b"}, IntervalNanos: int64(time.Second), LeaseNanos: int64(time.Minute)}
	if err := postJSON(context.Background(), http.DefaultClient, srv.URL+APIPrefix+PathRun, a, nil); err != nil {
		t.Fatal(err)
	}
	// Another assignment is refused while the first runs.
	if err := postJSON(context.Background(), http.DefaultClient, srv.URL+APIPrefix+PathRun, a, nil); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("second assignment: %v", err)
	}
	_, err = Run(context.Background(), Config{Run: runner.Config{Workload: testWorkload(), Driver: broker.NewDriver()}, Workers: []string{srv.URL, urls[0]}})
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("busy worker: %v", err)
	}
}

// TestWorkerStopsWithoutItsCoordinator: a worker whose coordinator
// stops renewing its lease stops its run within the lease and is free
// again.
func TestWorkerStopsWithoutItsCoordinator(t *testing.T) {
	broker := memory.NewBroker()
	urls, workers := startWorkers(t, 1, broker)
	w := testWorkload()
	w.Duration = time.Hour
	a := Assignment{RunID: "lease", Workload: w, Topics: []string{"a", "b"}, Producers: []int{0}, Consumers: []int{0},
		IntervalNanos: int64(100 * time.Millisecond), DrainTimeoutNanos: int64(time.Second), SetupTimeoutNanos: int64(5 * time.Second), LeaseNanos: int64(time.Second)}
	d := broker.NewDriver()
	for _, topic := range a.Topics {
		if err := d.CreateTopic(context.Background(), driver.TopicSpec{Name: topic, Partitions: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := postJSON(context.Background(), http.DefaultClient, urls[0]+APIPrefix+PathRun, a, nil); err != nil {
		t.Fatal(err)
	}
	if err := postJSON(context.Background(), http.DefaultClient, urls[0]+APIPrefix+PathStart, StartCommand{StartAt: time.Now().UnixNano()}, nil); err != nil {
		// The start may come before the worker is prepared: it waits.
		t.Fatal(err)
	}
	select {
	case <-workers[0].Finished():
	case <-time.After(15 * time.Second):
		t.Fatal("the worker went on without its coordinator")
	}
	var info Info
	if err := getJSON(context.Background(), http.DefaultClient, urls[0]+APIPrefix+PathInfo, &info); err != nil || info.Busy {
		t.Errorf("worker after losing its coordinator: %+v %v", info, err)
	}
}

// TestMergedHistogramEqualsOneHistogram: histograms recorded in several
// workers, encoded and merged, equal one histogram of all their values.
func TestMergedHistogramEqualsOneHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	whole := metrics.NewHDR()
	var parts []partInterval
	for range 4 {
		h := metrics.NewHDR()
		for range 5000 {
			v := int64(rng.ExpFloat64() * 2000)
			_ = h.RecordValue(v)
			_ = whole.RecordValue(v)
		}
		enc, err := metrics.Encode(h)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, partInterval{h: results.Histograms{PublishLatency: enc}, iv: results.Interval{Traffic: results.Traffic{PublishRate: 1}}})
	}
	iv, h, err := mergeInterval(parts, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := metrics.Summarize(whole)
	if iv.PublishLatency != want || iv.Acked != whole.TotalCount() || iv.PublishRate != 4 {
		t.Errorf("merged %+v (acked %d), one histogram %+v (%d)", iv.PublishLatency, iv.Acked, want, whole.TotalCount())
	}
	back, err := metrics.Decode(h.PublishLatency)
	if err != nil || !back.Equals(whole) {
		t.Errorf("the merged encoding differs from one histogram of every value (%v)", err)
	}
}

// FuzzDecodeAssignment: whatever a coordinator (or anyone) sends, the
// worker answers with an assignment it can run or an error, never a
// panic; one it accepts has a valid workload and ids the run can place.
func FuzzDecodeAssignment(f *testing.F) {
	good, _ := json.Marshal(Assignment{RunID: "x", Workload: testWorkload(), Topics: []string{"a", "b"}, Producers: []int{0, 3}, Consumers: []int{1},
		IntervalNanos: int64(time.Second), LeaseNanos: int64(time.Second)})
	f.Add(good)
	f.Add([]byte(`{"runId":"x","workload":{"topics":-1}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodeAssignment(bytes.NewReader(data))
		if err != nil {
			return
		}
		if a.Workload == nil || a.Workload.Validate() != nil || a.IntervalNanos < int64(10*time.Millisecond) {
			t.Fatalf("accepted an assignment it cannot run: %+v", a)
		}
	})
}
