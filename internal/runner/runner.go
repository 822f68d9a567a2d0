// Package runner executes one workload against one driver: it creates the
// topics, starts consumers and producers, samples counters and latency
// histograms every interval, stops, drains and cleans up. It knows nothing
// of any particular broker.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Config is one run's setup.
type Config struct {
	Workload *workload.Workload
	Driver   driver.Driver
	// Interval is the sampling interval (default 1 s).
	Interval time.Duration
	// DrainTimeout bounds the wait for consumers to catch up after the
	// producers stop (default 30 s).
	DrainTimeout time.Duration
	// SetupTimeout bounds the setup: topic creation, consumers joining
	// their groups, producers' start (default: SetupBound of the workload).
	SetupTimeout time.Duration
	// MaxInFlightBytes bounds each producer's unacknowledged bytes (default
	// 32 MiB); the in-flight message count is derived from it.
	MaxInFlightBytes int
	// MaxSendLag is the highest send lag p99 (actual minus intended send
	// time, measurement phase) with which a fixed-rate run still counts as
	// holding its target; negative disables the check. Zero means the
	// default, DefaultSendLag beyond the p99 of this machine's scheduling
	// delay in the measurement (see TargetSpec).
	MaxSendLag time.Duration
	// BacklogTimeout bounds each of the backlog build and drain phases of a
	// backlog test (default 10 min).
	BacklogTimeout time.Duration
	// ExistingTopics, if set, are used instead of new topics: they are
	// neither created nor deleted, and their number must equal the
	// workload's topics. Consumers start paused and resume when the run's
	// clock starts, so what the topics already hold is consumed inside the
	// measured time; the broker's stored count is not cross-checked.
	ExistingTopics []string
	// NoLatencyRecording skips every histogram record, to measure what
	// recording costs (bench/compare-kafka-tools). Latencies and interval
	// counts are then empty; the measured aggregate's counts and rates come
	// from the counters.
	NoLatencyRecording bool
	// SampleSystem, if set, is called at the end of every interval for the
	// machine's resource use since the previous call.
	SampleSystem func() *results.System
	// KeepTopics leaves the topics in place after the run.
	KeepTopics bool
	// Progress, if set, is called after every interval from one goroutine.
	Progress func(results.Interval)
	// Log receives phase messages; nil discards them.
	Log io.Writer
	// Abandon, when done, makes the runner give up waiting for anything
	// the broker must do (acknowledgements, the drain, closing clients,
	// deleting topics) and return what it measured at once. Cancelling the
	// ctx given to Run only stops the producers: the runner then drains
	// for at most InterruptDrain. Nil means never abandon.
	Abandon context.Context
	// InterruptDrain bounds the flush and drain after ctx is cancelled
	// (default 10 s).
	InterruptDrain time.Duration
	// RereadTimeout bounds the read of the broker that proves or
	// disproves a subscription's loss after the drain (default
	// DefaultRereadTimeout); see Reread.
	RereadTimeout time.Duration
	// ID is the run's id (default: NewID); topic and subscription names
	// derive from it.
	ID string
	// Faults are actions on the system under test at offsets into the
	// measurement phase; faults not yet fired when it ends do not fire.
	Faults []faults.Scheduled
	// Journal, if set, receives the run's progress as it happens: topics
	// before they are created and once deleted, and every interval.
	Journal Journal
	// Part, if set, makes the run one process's share of a run spread
	// over several (see Part); faults and backlog tests are then the
	// coordinator's, not the run's.
	Part *Part
}

// Journal receives a run's progress as it happens, so that a run killed
// outright still leaves what it measured and names the topics it created
// (see results.Journal). Its methods must not block for long.
type Journal interface {
	// CreatingTopic is called before the topic is created.
	CreatingTopic(name string)
	// DeletedTopic is called once a created topic is deleted.
	DeletedTopic(name string)
	// Interval is called with every interval and its histograms.
	Interval(iv results.Interval, h results.Histograms)
}

// TopicName is the name of topic t (from 0) of the run with the given id.
func TopicName(id string, t int) string { return fmt.Sprintf("bb-%s-%03d", id, t) }

// SubscriptionName is the name of subscription s (from 0) of topic t of
// the run with the given id: unique per run, also on existing topics.
func SubscriptionName(id string, t, s int) string {
	return fmt.Sprintf("bb-%s-%03d-sub-%03d", id, t, s)
}

// NewID returns a new run id: the UTC start time and 8 random hex digits.
func NewID() string {
	idBytes := make([]byte, 4)
	_, _ = rand.Read(idBytes)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(idBytes)
}

// ErrSetup wraps failures before any message was sent.
var ErrSetup = errors.New("run setup failed")

// ErrSetupTimeout wraps a setup failure because the setup took longer than
// Config.SetupTimeout.
var ErrSetupTimeout = errors.New("the setup took longer than its bound")

// SetupBound is the setup bound of a run of w when Config.SetupTimeout is
// not given: 60 s, plus 1 s per topic (topics are created one after
// another), plus 1 s per consumer group and 250 ms per consumer (each
// group rebalances as its members join, and on a busy machine hundreds of
// clients share the cores with the broker). One topic with one consumer
// gets 62.25 s; 100 topics with 3 groups of one consumer each, 9 min.
func SetupBound(w *workload.Workload) time.Duration {
	bound := 60 * time.Second
	if w == nil {
		return bound
	}
	groups := w.Topics * w.SubscriptionsPerTopic
	return bound + time.Duration(w.Topics)*time.Second + time.Duration(groups)*time.Second +
		time.Duration(groups*w.ConsumersPerSubscription)*250*time.Millisecond
}

// setupReportEvery is how often a setup that waits for consumers says
// what it waits for.
const setupReportEvery = 5 * time.Second

// Run executes the workload. It returns results whenever anything was
// measured, even with an error; results.Run.Partial is set when the run was
// cut short (ctx cancelled or a failure after producing started).
func Run(ctx context.Context, cfg Config) (*results.Run, error) {
	return newRun(cfg).execute(ctx)
}

// subscription is one subscription's name and delivery record.
type subscription struct {
	name    string
	topic   int // index into run.topics
	deliver *accounting.Subscription
}

type run struct {
	cfg       Config
	w         *workload.Workload
	res       *results.Run
	topics    []string
	producers []*producerWorker
	consumers []*consumerStats
	subs      []subscription
	pausers   []driver.Pauser // consumers paused for a backlog test
	// drained is true when the consumers caught up with everything the
	// broker stored: only then is a missing message lost rather than
	// undelivered.
	drained bool
	// stored is the broker's count of the run's messages once settled,
	// read by the drain and by the final accounting; nil until either
	// asks for it.
	stored *storedCount
	// sentAll is true when the producers sent their whole message limit.
	sentAll bool
	closers []func()
	logf    func(string, ...any)
	// schedule runs cfg.Faults once the measurement has begun; outages
	// records the stretches without acknowledgements from then on, and
	// probe how late timers fire. outageList is what outages recorded,
	// once the run is over.
	schedule   *faults.Schedule
	outages    *outages
	outageList []outage
	probe      *schedProbe
	origin     int64
	// leadersBefore receives the partitions' leaders at the start of
	// the measurement, for runs with faults on drivers that know them.
	leadersBefore chan map[string]map[int]int
	// part is cfg.Part; startAt is the origin the part's coordinator set.
	part    *Part
	startAt int64
	// consumersReady is set once r.subs and r.consumers are complete.
	consumersReady atomic.Bool
}

// leaders returns the leader of every partition of the run's topics, or
// nil if the driver cannot tell or the call fails.
func (r *run) leaders(ctx context.Context) map[string]map[int]int {
	place, ok := r.cfg.Driver.(driver.Placement)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	all := map[string]map[int]int{}
	for _, t := range r.topics {
		l, err := place.Leaders(ctx, t)
		if err != nil {
			return nil
		}
		all[t] = l
	}
	return all
}

// startMeasuring starts what watches the measurement from its start: the
// outage watcher, the scheduling probe and the fault schedule. The
// producers' longest waits count from here, not from the warmup.
func (r *run) startMeasuring(ctx context.Context, c *collector) {
	if r.outages == nil {
		r.outages, r.origin = r.watchOutages(r.cfg.Abandon), c.origin
		r.probe = startSchedProbe(r.cfg.Abandon)
		for _, p := range r.producers {
			p.free.longest.Store(0)
			p.stats.sendLongest.Store(0)
		}
	}
	if len(r.cfg.Faults) > 0 && r.schedule == nil {
		r.logf("fault schedule: %d fault(s) from the start of the measurement", len(r.cfg.Faults))
		r.schedule = faults.Start(ctx, r.cfg.Faults, r.topics, c.origin, c.measureFrom)
		r.leadersBefore = make(chan map[string]map[int]int, 1)
		go func() { r.leadersBefore <- r.leaders(r.cfg.Abandon) }()
	}
}

// recoverFaults fills in every fault event's recovery: from the intervals,
// and the longest stretch without acknowledgements from the outage
// watcher.
func (r *run) recoverFaults() {
	if len(r.res.Faults) == 0 {
		return
	}
	list := r.outageList
	if r.leadersBefore != nil {
		if before, after := <-r.leadersBefore, r.leaders(r.cfg.Abandon); before != nil && after != nil {
			moved := 0
			for t, parts := range before {
				for p, l := range parts {
					if after[t][p] != l {
						moved++
					}
				}
			}
			r.res.LeaderMoves = &moved
		}
	}
	for i := range r.res.Faults {
		ev := &r.res.Faults[i]
		faults.Recover(ev, r.res.Intervals, r.res.Faults[0].AtSeconds)
		if ev.Recovery == nil {
			continue
		}
		from, to := r.origin+int64(ev.AtSeconds*1e9), int64(math.MaxInt64)
		if rs := ev.Recovery.RecoverySeconds; rs != nil {
			to = from + int64(*rs*1e9)
		}
		ev.Recovery.UnavailableSeconds = longestFrom(list, from, to)
	}
}

// stopFaults stops the fault schedule and records its events.
func (r *run) stopFaults() {
	if r.schedule == nil {
		return
	}
	r.res.Faults = r.schedule.Stop()
	for _, ev := range r.res.Faults {
		if ev.Error != "" {
			r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("fault %q at %.1f s failed: %s", ev.Action, ev.AtSeconds, ev.Error))
		}
	}
}

func newRun(cfg Config) *run {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	if cfg.SetupTimeout <= 0 {
		cfg.SetupTimeout = SetupBound(cfg.Workload)
	}
	if cfg.BacklogTimeout <= 0 {
		cfg.BacklogTimeout = 10 * time.Minute
	}
	if cfg.MaxInFlightBytes <= 0 {
		cfg.MaxInFlightBytes = 32 << 20
	}
	if cfg.Abandon == nil {
		cfg.Abandon = context.Background()
	}
	if cfg.InterruptDrain <= 0 {
		cfg.InterruptDrain = 10 * time.Second
	}
	w := cfg.Workload
	id := cfg.ID
	if id == "" {
		id = NewID()
	}
	r := &run{cfg: cfg, w: w, logf: func(string, ...any) {}}
	if cfg.Log != nil {
		r.logf = func(f string, a ...any) { fmt.Fprintf(cfg.Log, f+"\n", a...) }
	}
	r.res = &results.Run{Schema: results.Schema, ID: id, Workload: w, IntervalSeconds: cfg.Interval.Seconds()}
	for t := range w.Topics {
		r.topics = append(r.topics, TopicName(id, t))
	}
	if len(cfg.ExistingTopics) > 0 {
		r.topics = cfg.ExistingTopics
	}
	if cfg.Part != nil {
		r.part, r.topics, cfg.Part.r = cfg.Part, cfg.Part.Topics, r
	}
	return r
}

func (r *run) execute(ctx context.Context) (*results.Run, error) {
	r.res.StartedAt = time.Now().UTC()
	defer func() { r.res.EndedAt = time.Now().UTC() }()
	if n := len(r.cfg.ExistingTopics); n > 0 && n != r.w.Topics {
		return nil, fmt.Errorf("%w: %d existing topics given for a workload with %d", ErrSetup, n, r.w.Topics)
	}
	if r.part != nil {
		w := r.w
		if err := r.part.check(w.Producers(), w.Topics*w.SubscriptionsPerTopic*w.ConsumersPerSubscription, w.Topics); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	created, err := r.setup(ctx)
	if err == nil && r.part != nil {
		r.startAt, err = r.waitForStart(ctx)
	}
	if err != nil {
		r.teardownBounded(created)
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	err = r.measure(ctx)
	r.teardownBounded(created)
	return r.res, err
}

// teardownBounded tears down, but returns as soon as cfg.Abandon is done,
// leaving a warning that names what may remain.
func (r *run) teardownBounded(created []string) {
	done := make(chan []string, 1)
	go func() { done <- r.teardown(created) }()
	select {
	case warnings := <-done:
		r.res.Warnings = append(r.res.Warnings, warnings...)
	case <-r.cfg.Abandon.Done():
		w := "teardown abandoned: clients were not closed"
		if len(created) > 0 && !r.cfg.KeepTopics {
			w += fmt.Sprintf(" and topics %s may remain (remove them with 'brokerbench clean')", strings.Join(created, ", "))
		}
		r.res.Warnings = append(r.res.Warnings, w)
	}
}

// setup checks the workload with the driver, builds the payloads, and
// creates topics, consumers and producers. It returns the topics it
// created, for teardown, also on error. It takes at most
// Config.SetupTimeout; an error for taking longer wraps ErrSetupTimeout.
func (r *run) setup(ctx context.Context) (created []string, err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.SetupTimeout, ErrSetupTimeout)
	defer cancel()
	defer func() {
		if err != nil && errors.Is(context.Cause(ctx), ErrSetupTimeout) {
			err = fmt.Errorf("%w of %s: %w", ErrSetupTimeout, r.cfg.SetupTimeout, err)
		}
	}()
	w, d := r.w, r.cfg.Driver
	if c, ok := d.(driver.Checker); ok {
		if err := c.Check(ctx, driver.CheckSpec{MessageSize: w.MessageSize, ExistingTopics: r.cfg.ExistingTopics}); err != nil {
			return nil, err
		}
	}
	// Payloads first: a workload that cannot have them leaves no topic.
	pool, err := payload.Generate(payload.Spec{Size: w.MessageSize, RandomRatio: w.PayloadRandomRatio, PoolSize: w.PayloadPoolSize, File: w.PayloadFile, Seed: w.Seed})
	if err != nil {
		return nil, err
	}
	created, err = r.createTopics(ctx)
	if err != nil {
		return created, err
	}
	if err := r.startConsumers(ctx); err != nil {
		return created, err
	}
	return created, r.startProducers(ctx, pool)
}

// createTopics creates the run's topics, unless it uses existing ones, and
// returns those it created, and, on error, the one that failed: a failed
// create (a timeout) may still leave the topic behind, which teardown
// then removes.
func (r *run) createTopics(ctx context.Context) ([]string, error) {
	var created []string
	if len(r.cfg.ExistingTopics) > 0 || r.part != nil {
		return nil, nil
	}
	for _, t := range r.topics {
		r.logf("creating topic %s (%d partitions)", t, r.w.PartitionsPerTopic)
		if r.cfg.Journal != nil {
			r.cfg.Journal.CreatingTopic(t)
		}
		if err := r.cfg.Driver.CreateTopic(ctx, driver.TopicSpec{Name: t, Partitions: r.w.PartitionsPerTopic, ReplicationFactor: r.w.ReplicationFactor}); err != nil {
			return append(created, t), err
		}
		created = append(created, t)
	}
	return created, nil
}

// startConsumers creates every subscription's consumers and waits until
// they have joined; for a backlog test, or on existing topics, it pauses
// them.
func (r *run) startConsumers(ctx context.Context) error {
	defer r.consumersReady.Store(true)
	groups, err := r.makeConsumers(ctx)
	if err != nil {
		return err
	}
	if err := r.settle(ctx, groups); err != nil {
		return err
	}
	if !r.backlogMode() && len(r.cfg.ExistingTopics) == 0 {
		return nil
	}
	for _, g := range groups {
		for _, c := range g.members {
			p, ok := c.(driver.Pauser)
			if !ok {
				return errors.New("backlog tests and existing topics need consumers that can pause; this driver's cannot")
			}
			p.Pause()
			r.pausers = append(r.pausers, p)
		}
	}
	return nil
}

// consumerGroup is one subscription's consumers in this process.
type consumerGroup struct {
	topic, sub string
	members    []driver.Consumer
}

// makeConsumers makes this process's consumers of every subscription, and
// the subscriptions' records, and returns the subscriptions that have
// consumers here.
func (r *run) makeConsumers(ctx context.Context) ([]consumerGroup, error) {
	w, d := r.w, r.cfg.Driver
	var groups []consumerGroup
	index := -1 // the consumer's global index
	for ti, t := range r.topics {
		for s := range w.SubscriptionsPerTopic {
			// Subscription names are unique per run, also on existing topics.
			g := consumerGroup{topic: t, sub: SubscriptionName(r.res.ID, ti, s)}
			rec := accounting.NewSubscription(w.Producers())
			r.subs = append(r.subs, subscription{name: g.sub, topic: ti, deliver: rec})
			for range w.ConsumersPerSubscription {
				if index++; !r.runsConsumer(index) {
					continue
				}
				st := newConsumerStats(rec, !r.cfg.NoLatencyRecording)
				if r.part != nil {
					st.skew = r.part.SkewNanos
				}
				// A run's own topics hold only its messages, and a
				// consume-only run reads what its topics hold: both
				// from the earliest.
				c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: t, Subscription: g.sub, Start: driver.StartEarliest}, st.onMessage)
				if err != nil {
					return nil, fmt.Errorf("consumer for topic %d: %w", ti, err)
				}
				r.consumers = append(r.consumers, st)
				// Closed once: before a re-read of the broker
				// (closeConsumers), or at teardown.
				r.closers = append(r.closers, sync.OnceFunc(c.Close))
				g.members = append(g.members, c)
			}
			if len(g.members) > 0 {
				groups = append(groups, g)
			}
		}
	}
	return groups, nil
}

// settle waits until every consumer is ready and every subscription has
// all its members, saying every setupReportEvery what it still waits for.
func (r *run) settle(ctx context.Context, groups []consumerGroup) error {
	if len(groups) == 0 {
		return nil
	}
	// A part's consumers share their subscriptions with other parts':
	// the subscription is settled with all of them.
	members := func(g consumerGroup) int {
		if r.part != nil {
			return r.w.ConsumersPerSubscription
		}
		return len(g.members)
	}
	// settled counts the groups done; the reports read it.
	var settled atomic.Int64
	r.logf("waiting for %d consumers in %d groups to join (%s)", len(r.consumers), len(groups), setupLeft(ctx, r.cfg.SetupTimeout))
	stop := r.reportEvery(setupReportEvery, func() string {
		i := int(settled.Load())
		if i >= len(groups) {
			return ""
		}
		g := groups[i]
		return fmt.Sprintf("still waiting for consumers to join: group %s (topic %s, members: %d); %d of %d groups settled (%s)",
			g.sub, g.topic, members(g), i, len(groups), setupLeft(ctx, r.cfg.SetupTimeout))
	})
	defer stop()
	for _, g := range groups {
		for _, c := range g.members {
			if err := c.Ready(ctx); err != nil {
				return fmt.Errorf("subscription %s: %w", g.sub, err)
			}
		}
		if wt, ok := r.cfg.Driver.(driver.SubscriptionWaiter); ok {
			if err := wt.WaitSubscription(ctx, g.topic, g.sub, members(g)); err != nil {
				return err
			}
		}
		settled.Add(1)
	}
	return nil
}

// setupLeft says how much of the setup's bound is left.
func setupLeft(ctx context.Context, bound time.Duration) string {
	deadline, ok := ctx.Deadline()
	if !ok {
		return "no time limit"
	}
	return fmt.Sprintf("%s of the setup's %s left", time.Until(deadline).Round(time.Second), bound)
}

// reportEvery logs what() every interval, unless it is empty, until the
// returned stop is called. what is called from another goroutine.
func (r *run) reportEvery(interval time.Duration, what func() string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if s := what(); s != "" {
					r.logf("%s", s)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// startProducers creates the producers, each with its share of the rate
// and of the message limit, and its in-flight window.
func (r *run) startProducers(ctx context.Context, pool [][]byte) error {
	w := r.w
	// At most 16384 messages in flight per producer: measured on 100-byte
	// messages at max rate, 65536 slots spread each message over cold
	// cache lines and cost 20-30% more CPU per message for no more
	// throughput (bench/README.md).
	// The producers' message copies together stay within 1 GiB.
	n := w.Producers()
	perProducer := min(r.cfg.MaxInFlightBytes, (1<<30)/max(n, 1))
	inFlight := max(16, min(16384, perProducer/w.MessageSize))
	for i := range n {
		if !r.runsProducer(i) {
			continue
		}
		keys, err := payload.NewKeys(w.KeyDistributor, w.Seed+uint64(i))
		if err != nil {
			return err
		}
		limit := int64(0)
		if w.MessageLimit > 0 {
			limit = w.MessageLimit / int64(n)
			if int64(i) < w.MessageLimit%int64(n) {
				limit++
			}
		}
		pw := newProducerWorker(uint32(i), pacer.Split(w.ProducerRate, n, i), limit, keys, pool, inFlight)
		pw.record = !r.cfg.NoLatencyRecording
		p, err := r.cfg.Driver.NewProducer(ctx, driver.ProducerSpec{Topic: r.topics[i%len(r.topics)], MaxMessageBytes: w.MessageSize, MaxInFlight: inFlight}, pw.onAck)
		if err != nil {
			return fmt.Errorf("producer %d: %w", i, err)
		}
		pw.prod = p
		r.producers = append(r.producers, pw)
	}
	return nil
}

// stop waiting for it.
func (r *run) teardown(created []string) []string {
	var warnings []string
	for _, p := range r.producers {
		if p.prod != nil {
			p.prod.Close()
		}
	}
	for _, c := range r.closers {
		c()
	}
	if r.cfg.KeepTopics {
		return warnings
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range created {
		err := r.cfg.Driver.DeleteTopic(ctx, t)
		if err != nil && !errors.Is(err, driver.ErrTopicNotFound) {
			warnings = append(warnings, err.Error())
			continue
		}
		// A topic that is not there (its create failed) is not left
		// behind either.
		if r.cfg.Journal != nil {
			r.cfg.Journal.DeletedTopic(t)
		}
	}
	return warnings
}

// totals is a snapshot of all counters.
type totals struct {
	sent, acked, failed, consumed, foreign int64
	// waitedForBroker is the producers' summed time waiting for a free
	// in-flight slot or for the client to take a message, in nanoseconds.
	waitedForBroker int64
}

func (r *run) totals() totals {
	var t totals
	now := clock.Now()
	for _, p := range r.producers {
		t.sent += p.stats.sent.Load()
		t.acked += p.stats.acked.Load()
		t.failed += p.stats.failed.Load()
		t.waitedForBroker += p.waitedForBroker(now)
	}
	for _, c := range r.consumers {
		t.consumed += c.consumed.Load()
		t.foreign += c.foreign.Load()
	}
	return t
}

// measure runs the producing phases and the drain, then fills in results.
func (r *run) measure(ctx context.Context) error {
	c := &collector{r: r, cur: newLatencies(), agg: newLatencies(), warm: newLatencies()}
	prodCtx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	wg, finished := r.startProducing(prodCtx, c)

	var interrupted, sentAll bool
	if r.backlogMode() {
		interrupted = r.backlogPhases(ctx, c, finished)
	} else {
		interrupted, sentAll = r.timedPhases(ctx, c, finished)
	}
	c.measureTo = c.lastAt
	measureEnd := c.last
	r.stopFaults()
	stopProducers()
	measureEnd = r.stopProducing(c, wg, sentAll, measureEnd)
	r.sentAll = sentAll
	return r.finishMeasuring(ctx, c, interrupted, measureEnd)
}

// startProducing starts the producers at the run's origin and resumes the
// consumers (unless a backlog test holds them). finished is closed when
// the producing is over: every producer sent its limit (every part's, in
// a distributed run), or the subscriptions consumed the limit of a run
// without producers.
func (r *run) startProducing(prodCtx context.Context, c *collector) (*sync.WaitGroup, <-chan struct{}) {
	wg := &sync.WaitGroup{}
	finished := make(chan struct{})
	c.origin = clock.Now()
	if r.part != nil {
		c.origin = r.startAt
	}
	c.lastAt = c.origin
	// Producers start one millisecond after the origin so the first
	// intended send time is never in the past.
	start := c.origin + int64(time.Millisecond)
	for _, p := range r.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(prodCtx, r.cfg.Abandon, start)
		}()
	}
	// Without producers the run lasts its duration, or until the
	// subscriptions consumed the message limit; with them it also ends when
	// all have sent their message limit.
	switch {
	case r.part != nil:
		// A part's run ends as one whose producers finished only when
		// every part's have.
		go func() {
			wg.Wait()
			if prodCtx.Err() != nil {
				return // stopped, not finished: no limit was sent
			}
			r.part.SentAll()
			select {
			case <-r.part.AllSent:
				close(finished)
			case <-prodCtx.Done():
			}
		}()
	case len(r.producers) > 0:
		go func() { wg.Wait(); close(finished) }()
	case r.w.MessageLimit > 0 && len(r.subs) > 0:
		go r.closeWhenConsumed(prodCtx, r.w.MessageLimit*int64(len(r.subs)), finished)
	}
	if !r.backlogMode() {
		for _, p := range r.pausers {
			p.Resume()
		}
	}
	return wg, finished
}

// stopProducing waits for the stopped producers, sampling meanwhile, and
// for a run that sent its whole limit, for its last acknowledgements,
// which then end its measurement. It returns the counters at the end of
// the measurement.
func (r *run) stopProducing(c *collector, wg *sync.WaitGroup, sentAll bool, measureEnd totals) totals {
	// A producer blocked in a send returns when the client takes the
	// message, which can take as long as the broker's backlog: sample
	// meanwhile.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	phase := results.Drain
	if sentAll {
		phase = results.Measure
	}
	c.sampleUntil(r.cfg.Abandon, phase, stopped, nil, time.Time{})
	<-stopped
	if sentAll && len(r.producers) > 0 {
		// A run that sent its message limit is measured until the last
		// acknowledgement, so the last messages' latencies and the time
		// they took are part of it.
		flushCtx, cancel := context.WithTimeout(r.cfg.Abandon, r.cfg.DrainTimeout)
		r.flushSampling(flushCtx, c, results.Measure)
		cancel()
		c.sample(results.Measure)
		c.measureTo, measureEnd = c.lastAt, c.last
	}
	return measureEnd
}

// finishMeasuring waits for outstanding acknowledgements, then for the
// consumers to catch up, and fills in the results.
func (r *run) finishMeasuring(ctx context.Context, c *collector, interrupted bool, measureEnd totals) error {
	// Wait for outstanding acknowledgements, then for consumers to catch
	// up: for DrainTimeout, or InterruptDrain after an interrupt, and not
	// at all once the run is abandoned.
	bound := r.cfg.DrainTimeout
	if interrupted {
		if r.cfg.InterruptDrain < bound {
			bound = r.cfg.InterruptDrain
		}
		r.logf("interrupted: producers stopped; waiting up to %s for acknowledgements and consumers (interrupt again to abandon)", bound)
	}
	waitCtx, cancelWait := context.WithTimeout(r.cfg.Abandon, bound)
	defer cancelWait()
	r.flushSampling(waitCtx, c, results.Drain)
	drainErr := r.drain(waitCtx, c, bound)
	c.samplePending(results.Drain)
	r.drained = drainErr == nil && !interrupted
	r.summarise(c, measureEnd)
	switch {
	case interrupted:
		r.res.Partial, r.res.PartialReason = true, "interrupted: "+context.Cause(ctx).Error()
		return context.Cause(ctx)
	case drainErr != nil:
		r.res.Warnings = append(r.res.Warnings, drainErr.Error())
	}
	return nil
}

// flushSampling waits until ctx ends for every producer's
// acknowledgements, sampling intervals of phase meanwhile.
func (r *run) flushSampling(ctx context.Context, c *collector, phase results.Phase) {
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		r.flushWithin(ctx)
	}()
	c.sampleUntil(ctx, phase, flushed, nil, time.Time{})
	<-flushed
}

// flushWithin waits until ctx ends for every producer's acknowledgements.
func (r *run) flushWithin(ctx context.Context) {
	for _, p := range r.producers {
		if err := p.prod.Flush(ctx); err != nil {
			r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("flush producer %d: %v", p.id, err))
		}
	}
}

// timedPhases samples through the warmup and the measurement until the
// duration ends, the producers finish (sentAll) or ctx ends (interrupted).
func (r *run) timedPhases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool) {
	w := r.w
	warmupEnd := c.origin + int64(w.Warmup)
	end := warmupEnd + int64(w.Duration)
	r.logf("producing: warmup %s, measurement %s", w.Warmup, w.Duration)
	c.measureFrom, c.measuring = c.origin, w.Warmup == 0
	if c.measuring {
		r.startMeasuring(ctx, c)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := c.origin
	for {
		// Sample at every interval boundary, and also exactly at the end of
		// the warmup, so that no interval straddles two phases.
		next += int64(r.cfg.Interval)
		boundary := min(next, end)
		if c.lastAt < warmupEnd && boundary > warmupEnd {
			boundary, next = warmupEnd, warmupEnd
		}
		timer.Reset(time.Duration(boundary - clock.Now()))
		producersDone := false
		select {
		case <-ctx.Done():
			interrupted = true
		case <-finished:
			producersDone = true
		case <-timer.C:
		}
		// An interrupt also stops the producers, which may close finished
		// first: it is still an interrupt.
		if ctx.Err() != nil {
			interrupted, producersDone = true, false
		}
		phase := results.Measure
		if c.lastAt < warmupEnd {
			phase = results.Warmup
		}
		c.sampleDue(phase, boundary)
		if phase == results.Warmup && c.lastAt >= warmupEnd {
			c.measureStart, c.measureFrom, c.measuring = c.last, c.lastAt, true
			// The measurement lasts its duration from the sample that
			// began it, even if that sample came late, and its intervals
			// count from there.
			end, next = c.lastAt+int64(w.Duration), c.lastAt
			r.startMeasuring(ctx, c)
		}
		if producersDone && !c.measuring {
			c.measureWarmup()
		}
		// After a sample more than half an interval late the schedule
		// starts again from it, rather than catching up with a burst of
		// short intervals.
		if c.lastAt-next > int64(r.cfg.Interval)/2 {
			next = c.lastAt
		}
		if interrupted || producersDone || c.lastAt >= end {
			return interrupted, producersDone
		}
	}
}

// drain waits until every subscription consumed every acknowledged message,
// sampling intervals meanwhile, until ctx ends (bound is its timeout, for
// the message).
func (r *run) drain(ctx context.Context, c *collector, bound time.Duration) error {
	if r.part != nil {
		return r.drainPart(ctx, c, bound)
	}
	if len(r.consumers) == 0 || len(r.producers) == 0 {
		return nil
	}
	// Caught up means every subscription received every message the
	// broker holds (without the broker's count, every acknowledged one),
	// counting distinct messages: redeliveries, which follow a consumer
	// rebalance after a fault, must not end the drain while messages are
	// still on their way and turn them into "lost". Messages the broker
	// acknowledged and lost never arrive, and are counted by reconcile.
	// The broker's count settles in the background (replicas may still
	// be fetching the last acknowledged messages); until it has, the
	// drain is not over.
	subs := int64(r.w.SubscriptionsPerTopic)
	want := func() int64 { return r.totals().acked * subs }
	if sc, ok := r.cfg.Driver.(driver.WrittenCounter); ok && len(r.cfg.ExistingTopics) == 0 {
		r.stored = r.settleStored(ctx, sc, func() int64 { return r.totals().acked })
		want = func() int64 {
			if n, ok := r.stored.settled(); ok {
				return n * subs
			}
			select {
			case <-r.stored.done: // the driver failed: acknowledgements only
				return r.totals().acked * subs
			default:
				return math.MaxInt64
			}
		}
	}
	caughtUp := func() bool { return r.distinct() >= want() }
	if caughtUp() {
		return nil
	}
	if c.sampleUntil(ctx, results.Drain, nil, caughtUp, time.Time{}) == conditionMet {
		return nil
	}
	of := fmt.Sprintf("%d of %d messages received", r.distinct(), want())
	if want() == math.MaxInt64 {
		of = fmt.Sprintf("%d messages received; the broker's count of stored messages had not settled", r.distinct())
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("drain: consumers did not catch up within %s: %s", bound, of)
	}
	return fmt.Errorf("drain abandoned: %s", of)
}

// distinct is the number of different messages the subscriptions received,
// summed over them.
func (r *run) distinct() int64 {
	var n int64
	for _, s := range r.subs {
		n += s.deliver.Distinct()
	}
	return n
}

// summarise fills in the measured aggregate, the accounting and the
// target's verdict once the run is over.
func (r *run) summarise(c *collector, measureEnd totals) {
	secs := 0.0
	if c.measuring && c.measureTo > c.measureFrom {
		secs = float64(c.measureTo-c.measureFrom) / 1e9
	}
	agg := c.agg.summaries()
	r.res.Measured = results.Aggregate{
		DurationSeconds: secs,
		Traffic:         traffic(agg, measureEnd.failed-c.measureStart.failed, secs, r.w.MessageSize),
	}
	m := &r.res.Measured
	m.System = results.MeanSystem(r.res.Intervals)
	m.SampleDelayMaxMs = float64(c.lateMax) / 1e6
	if secs > 0 && len(r.producers) > 0 {
		m.BrokerWaitShare = min(1, float64(measureEnd.waitedForBroker-c.measureStart.waitedForBroker)/(secs*1e9*float64(len(r.producers))))
	}
	if r.cfg.NoLatencyRecording && secs > 0 {
		m.Sent, m.Acked = measureEnd.sent-c.measureStart.sent, measureEnd.acked-c.measureStart.acked
		m.Consumed = measureEnd.consumed - c.measureStart.consumed
		m.PublishRate, m.ConsumeRate = float64(m.Acked)/secs, float64(m.Consumed)/secs
		m.PublishMBps, m.ConsumeMBps = m.PublishRate*float64(r.w.MessageSize)/1e6, m.ConsumeRate*float64(r.w.MessageSize)/1e6
	}
	var err error
	if r.res.Histograms, err = agg.encode(); err != nil {
		r.res.Warnings = append(r.res.Warnings, err.Error())
	}
	r.watched(m, c.measureTo)
	r.count()
	r.recoverFaults()
	m.BacklogGrowth = BacklogGrowth(r.res.Intervals)
	if r.res.Backlog == nil && len(r.subs) > 0 && len(r.producers) > 0 {
		m.ConsumersBehind = ConsumersBehind(m, r.res.Intervals, r.w.SubscriptionsPerTopic)
	}
	if rate := r.w.ProducerRate; rate > 0 && len(r.producers) > 0 {
		r.res.Target = JudgeTarget(m, TargetSpec{Rate: rate, MaxSendLag: r.cfg.MaxSendLag, Interval: r.cfg.Interval, SentAll: r.sentAll})
	}
}

// count fills in the run's message accounting: the counters, failures by
// kind, the reconciliation of sends with deliveries, and the broker's own
// count where the driver can give it.
func (r *run) count() {
	t := r.totals()
	cnt := &r.res.Counts
	cnt.Sent, cnt.Acked, cnt.Failed, cnt.Consumed, cnt.Foreign = t.sent, t.acked, t.failed, t.consumed, t.foreign
	cnt.Unacked = t.sent - t.acked - t.failed
	for _, p := range r.producers {
		p.stats.failMu.Lock()
		for k, v := range p.stats.failedByKind {
			if cnt.FailedByKind == nil {
				cnt.FailedByKind = map[string]int64{}
			}
			cnt.FailedByKind[k] += v
		}
		p.stats.failMu.Unlock()
		cnt.LatencyClamped += p.stats.acks.Clamped(publishLane) + p.stats.sendLag.Clamped(0)
	}
	for _, s := range r.consumers {
		cnt.LatencyClamped += s.endToEnd.Clamped(0)
		cnt.OutOfOrder += s.outOfOrder.Load()
	}
	if r.part != nil {
		r.keepRecords()
		return
	}
	r.reconcile(cnt)
	if sc, ok := r.cfg.Driver.(driver.WrittenCounter); ok && len(r.cfg.ExistingTopics) == 0 {
		if r.stored == nil {
			r.stored = r.settleStored(r.cfg.Abandon, sc, func() int64 { return t.acked })
		}
		stored, err := r.stored.wait()
		if err != nil {
			r.res.Warnings = append(r.res.Warnings, "count stored messages: "+err.Error())
		} else {
			cnt.StoredByBroker = &stored
			switch {
			case !cnt.StoredExplained():
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("accounting mismatch: the broker stores %d messages but %d were acknowledged", stored, t.acked))
			case stored > t.acked:
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("%d of the %d failed sends were stored all the same: the producer saw an error (such as a timeout) for a message the broker had written", stored-t.acked, t.failed))
			}
		}
	}
}

func traffic(h summaries, failed int64, secs float64, messageSize int) results.Traffic {
	t := results.Traffic{
		Sent: h.lag.TotalCount(), Acked: h.pub.TotalCount(), Failed: failed, Consumed: h.e2e.TotalCount(),
		PublishLatency: metrics.Summarize(h.pub), ServiceTime: metrics.Summarize(h.svc),
		SendLag: metrics.Summarize(h.lag), EndToEndLatency: metrics.Summarize(h.e2e),
	}
	if secs > 0 {
		t.PublishRate, t.ConsumeRate = float64(t.Acked)/secs, float64(t.Consumed)/secs
		t.PublishMBps, t.ConsumeMBps = t.PublishRate*float64(messageSize)/1e6, t.ConsumeRate*float64(messageSize)/1e6
	}
	return t
}

// reconcile compares each subscription's deliveries with the producers'
// outcomes and adds the result to cnt (see Reconcile).
func (r *run) reconcile(cnt *results.Counts) {
	outcomes := make([]accounting.Outcome, len(r.producers))
	for i, p := range r.producers {
		outcomes[i] = p.outcome()
	}
	records := make([]Record, len(r.subs))
	for i, sub := range r.subs {
		records[i] = Record{Name: sub.name, Topic: sub.topic, Deliveries: sub.deliver}
	}
	rr := Reread{Topics: r.topics, Ctx: r.cfg.Abandon, Timeout: r.cfg.RereadTimeout, Logf: r.logf, Before: sync.OnceFunc(r.closeConsumers)}
	rr.Driver, _ = r.cfg.Driver.(driver.Rereader)
	Reconcile(cnt, records, outcomes, len(r.topics), r.drained, rr)
}

// consumersCloseBound bounds the wait for the run's consumers to close
// before a re-read; the re-read goes ahead after it.
const consumersCloseBound = 30 * time.Second

// closeConsumers closes the run's consumers, so that nothing is delivered
// to them while the broker is read again and a queue takes back what
// they held unacknowledged; it waits at most consumersCloseBound, or
// until the run is abandoned.
func (r *run) closeConsumers() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range r.closers {
			c()
		}
	}()
	t := time.NewTimer(consumersCloseBound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.logf("the consumers did not close within %s; reading the broker again all the same", consumersCloseBound)
	case <-r.cfg.Abandon.Done():
	}
}

// Reread is how Reconcile proves a loss: a subscription that still misses
// acknowledged messages after a complete drain has what the broker holds
// for it read again, and only what that read does not find is lost.
type Reread struct {
	// Driver reads the broker again; nil if the driver cannot, and the
	// missing messages are then an unconfirmed loss.
	Driver driver.Rereader
	// Topics names the topics, by index.
	Topics []string
	// Ctx ends every re-read early when done (nil: never).
	Ctx context.Context
	// Timeout bounds each subscription's re-read (default
	// DefaultRereadTimeout).
	Timeout time.Duration
	// Logf, if set, says what is read again.
	Logf func(string, ...any)
	// Before, if set, is called before every re-read and must do its
	// work once: the runner closes its consumers, so that the broker
	// holds again what they had taken without acknowledging it.
	Before func()
}

// DefaultRereadTimeout bounds a subscription's re-read by default: time
// to read a few million messages again from a log.
const DefaultRereadTimeout = 2 * time.Minute

// errAllFound ends a re-read that found every missing message.
var errAllFound = errors.New("every missing message found")

// read reads again what the broker holds for rec's subscription, notes
// every missing acknowledged message it finds (accounting Found), and
// returns the evidence; missing is how many rec lacks.
func (rr Reread) read(rec Record, mine []accounting.Outcome, missing int64) *results.Reread {
	ev := &results.Reread{Missing: missing}
	if rr.Driver == nil || rec.Topic >= len(rr.Topics) {
		ev.Error = "the driver cannot read the broker again"
		return ev
	}
	if rr.Logf != nil {
		rr.Logf("subscription %s misses %d acknowledged messages after the drain: reading what the broker holds for it again", rec.Name, missing)
	}
	if rr.Before != nil {
		rr.Before()
	}
	parent, timeout := rr.Ctx, rr.Timeout
	if parent == nil {
		parent = context.Background()
	}
	if timeout <= 0 {
		timeout = DefaultRereadTimeout
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, timeout)
	defer stop()
	err := rr.Driver.Reread(ctx, rr.Topics[rec.Topic], rec.Name, func(v []byte) {
		ev.Read++
		h, err := payload.Parse(v)
		if err != nil || int(h.ProducerID) >= len(mine) || !mine[h.ProducerID].Acknowledged(h.Seq) {
			return
		}
		if rec.Deliveries.Found(h.ProducerID, h.Seq) {
			if ev.Found++; ev.Found == missing {
				cancel(errAllFound)
			}
		}
	})
	switch {
	case errors.Is(context.Cause(ctx), errAllFound), err == nil:
		ev.Complete = true
	case errors.Is(err, context.DeadlineExceeded):
		ev.Error = fmt.Sprintf("the re-read did not finish within %s", timeout)
	default:
		ev.Error = "re-read: " + err.Error()
	}
	return ev
}

// Record is one subscription's deliveries, for Reconcile.
type Record struct {
	Name       string
	Topic      int // index of its topic
	Deliveries *accounting.Subscription
}

// Reconcile compares each subscription's deliveries with the outcomes of
// the producers (indexed by producer id; producer i writes to topic i mod
// topics) and adds lost, duplicated and unexpected messages to cnt. If the
// consumers were not drained (interrupted, timed out), missing messages may
// still be in the broker: they count as undelivered, not lost. After a
// complete drain, a subscription that misses messages is read again
// (see Reread): those found are delivered late, those not found in a
// complete re-read are lost, and the rest are an unconfirmed loss.
func Reconcile(cnt *results.Counts, records []Record, outcomes []accounting.Outcome, topics int, drained bool, rr Reread) {
	for _, sub := range records {
		// Only the producers writing to the subscription's topic count.
		mine := make([]accounting.Outcome, len(outcomes))
		for i := range outcomes {
			if i%topics == sub.Topic {
				mine[i] = outcomes[i]
			}
		}
		res := sub.Deliveries.Reconcile(mine)
		lost, undelivered, unconfirmed := int64(res.Lost), int64(0), int64(0)
		var evidence *results.Reread
		switch {
		case !drained:
			lost, undelivered = 0, lost
		case lost > 0:
			evidence = rr.read(sub, mine, lost)
			// The run's consumers may have received some meanwhile.
			res = sub.Deliveries.Reconcile(mine)
			lost = int64(res.Lost)
			if !evidence.Complete {
				lost, unconfirmed = 0, lost
			}
		}
		cnt.Subscriptions = append(cnt.Subscriptions, results.SubscriptionCounts{
			Name: sub.Name, Expected: int64(res.Expected), Delivered: int64(res.Delivered), Lost: lost,
			UnconfirmedLoss: unconfirmed, DeliveredLate: int64(res.Late), Undelivered: undelivered,
			Duplicated: res.Duplicated, FailedDelivered: int64(res.FailedDelivered), Unexpected: int64(res.Unexpected),
			Reread: evidence,
		})
		cnt.Lost += lost
		cnt.UnconfirmedLoss += unconfirmed
		cnt.DeliveredLate += int64(res.Late)
		cnt.Undelivered += undelivered
		cnt.Duplicated += res.Duplicated
		cnt.FailedDelivered += int64(res.FailedDelivered)
		cnt.Unexpected += int64(res.Unexpected)
	}
}

// storedMessages asks the broker how many messages the run's topics hold.
func (r *run) storedMessages(ctx context.Context, sc driver.WrittenCounter) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stored int64
	for _, topic := range r.topics {
		n, err := sc.Written(ctx, topic)
		if err != nil {
			return 0, err
		}
		stored += n
	}
	return stored, nil
}

// closeWhenConsumed closes done once the consumers have received n messages
// in total (foreign ones included), or when ctx ends.
func (r *run) closeWhenConsumed(ctx context.Context, n int64, done chan<- struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for t := r.totals(); t.consumed+t.foreign < n; t = r.totals() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	close(done)
}
