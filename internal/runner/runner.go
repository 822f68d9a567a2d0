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
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// DefaultMaxInFlightBytes is Config.MaxInFlightBytes when none is given.
const DefaultMaxInFlightBytes = 32 << 20

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

// Run executes the workload. It returns results whenever anything was
// measured, even with an error; results.Run.Partial is set when the run was
// cut short (ctx cancelled or a failure after producing started). While it
// runs, the process's garbage collector trades memory for CPU (see
// runGCPercent), unless GOGC is set.
func Run(ctx context.Context, cfg Config) (*results.Run, error) {
	defer raiseGCTarget()()
	return newRun(cfg).execute(ctx)
}

// subscription is one subscription's name and delivery record.
type subscription struct {
	name    string
	topic   int // index into run.topics
	deliver *accounting.Subscription
}

// run is one Run under way: its setup (setup.go), the load shape that
// drives its producing phases (executor.go and one file per shape), its
// sampling (collector.go), what watches the measurement (watch.go), its
// summary and accounting (summary.go, reconcile.go) and its teardown. It
// is used by one goroutine, apart from the counters its clients update.
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
	// giveUpSending ends the context the producers' sends were given,
	// once they stayed blocked in a send for DrainTimeout after the stop.
	giveUpSending context.CancelFunc
	closers       []func()
	logf          func(string, ...any)
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
	// pacing is the producers' total target rate over time, nil for as
	// fast as they can (Workload.Pacing).
	pacing pacer.Profile
}

// newRun fills in cfg's defaults and names the run's topics.
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
		cfg.MaxInFlightBytes = DefaultMaxInFlightBytes
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
	r := &run{cfg: cfg, w: w, logf: func(string, ...any) {}, pacing: w.Pacing()}
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

// execute sets up, measures and tears down (see Run).
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
