package distributed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Config is a distributed run's setup.
type Config struct {
	// Run is the run's setup as for one process. Its Driver is the
	// coordinator's own: it creates and deletes the topics and counts what
	// the broker stores. Journal, Progress and SampleSystem see the merged
	// intervals. Faults, backlog tests and NoLatencyRecording are not
	// supported in a distributed run.
	Run runner.Config
	// Workers are the workers' base URLs (http://host:port).
	Workers   []string
	Placement Placement
	// Driver tells the workers how to make their drivers.
	Driver DriverSource
	// Client makes the API calls (default: a client with no timeout; every
	// call has its own bound).
	Client *http.Client
	// Lease is how long a worker runs on without word from the coordinator
	// (default 10 s); the coordinator renews it four times as often.
	Lease time.Duration
	// WaitForWorkers is how long to wait for workers that do not answer
	// yet (pods still starting); 0 fails at once.
	WaitForWorkers time.Duration
}

// member is one worker as the coordinator follows it.
type member struct {
	url   string
	info  Info
	off   offset
	share share
	// intervals are the worker's intervals so far.
	intervals        []partInterval
	prepared         bool
	sentAll          bool
	draining         bool
	part             *PartResult
	ended            bool   // done, failed or lost
	err              string // why it failed or was lost
	lastIntervalTime float64
}

// memberEvent is an event from member i's stream, or the stream's end.
type memberEvent struct {
	i   int
	ev  Event
	err error // the stream ended before Done or Failed
}

type coordinator struct {
	cfg     Config
	rc      runner.Config // cfg.Run with defaults
	members []*member
	events  chan memberEvent
	res     *results.Run
	merged  int // intervals merged so far
	// sentSoFar and consumedSoFar are the merged intervals' sums, for
	// the run's backlog.
	sentSoFar, consumedSoFar int64
	logf                     func(string, ...any)
	caught                   bool
	stopped                  bool
	allSentTold              bool
	// storedSeen is the broker's last count, to tell when it has settled.
	storedSeen int64
}

// Run makes a distributed run: it measures the workers' clocks, creates
// the topics, hands out the assignments, starts every worker at one
// instant and merges what they measured. Like runner.Run it returns results
// whenever anything was measured, even with an error; a worker that fails
// or is lost mid-run makes the results partial.
func Run(ctx context.Context, cfg Config) (*results.Run, error) {
	c, err := newCoordinator(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	c.res.StartedAt = time.Now().UTC()
	defer func() { c.res.EndedAt = time.Now().UTC() }()
	if err := c.probe(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	topics, created, err := c.createTopics(ctx)
	defer c.deleteTopics(created)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	runErr := c.execute(ctx, topics)
	if runErr != nil && len(c.res.Intervals) == 0 && c.parts() == 0 {
		return nil, runErr
	}
	return c.res, errors.Join(runErr, c.finish())
}

func newCoordinator(cfg Config) (*coordinator, error) {
	rc := cfg.Run
	w := rc.Workload
	if err := CheckWorkload(w); err != nil {
		return nil, err
	}
	switch {
	case len(cfg.Workers) == 0:
		return nil, errors.New("no workers given")
	case len(rc.Faults) > 0:
		return nil, errors.New("fault schedules are not supported in a distributed run yet: run the workload in one process")
	case rc.NoLatencyRecording:
		return nil, errors.New("a distributed run merges latency histograms: it cannot run without latency recording")
	}
	if cfg.Placement == "" {
		cfg.Placement = Spread
	}
	if err := CheckSpread(w, len(cfg.Workers), cfg.Placement); err != nil {
		return nil, err
	}
	shares, err := plan(w, len(cfg.Workers), cfg.Placement)
	if err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 10 * time.Second
	}
	rc = withDefaults(rc)
	c := &coordinator{cfg: cfg, rc: rc, events: make(chan memberEvent, 64), logf: func(string, ...any) {}}
	if rc.Log != nil {
		c.logf = func(f string, a ...any) { fmt.Fprintf(rc.Log, f+"\n", a...) }
	}
	seen := map[string]bool{}
	for i, u := range cfg.Workers {
		u = strings.TrimRight(u, "/")
		if seen[u] {
			return nil, fmt.Errorf("worker %s is given twice", u)
		}
		seen[u] = true
		c.members = append(c.members, &member{url: u, share: shares[i]})
	}
	c.res = &results.Run{Schema: results.Schema, ID: rc.ID, Workload: w, IntervalSeconds: rc.Interval.Seconds()}
	return c, nil
}

// CheckWorkload reports what in w a distributed run cannot do yet.
func CheckWorkload(w *workload.Workload) error {
	switch {
	case len(w.Faults) > 0:
		return errors.New("fault schedules are not supported in a distributed run yet: run the workload in one process")
	case w.ConsumerBacklogSizeGB > 0:
		return errors.New("backlog tests are not supported in a distributed run yet: run the workload in one process")
	case w.Producers() == 0 && w.MessageLimit > 0:
		return errors.New("a consume-only run with a message limit cannot be spread over workers yet: run it in one process")
	case w.Transactional():
		return errors.New("transactions are not supported in a distributed run yet: run the workload in one process")
	}
	return nil
}

// withDefaults fills in the defaults runner.Run would use.
func withDefaults(rc runner.Config) runner.Config {
	if rc.ID == "" {
		rc.ID = runner.NewID()
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&rc.Interval, time.Second}, {&rc.DrainTimeout, 30 * time.Second}, {&rc.SetupTimeout, runner.SetupBound(rc.Workload)},
		{&rc.MaxSendLag, 10 * time.Millisecond}, {&rc.InterruptDrain, 10 * time.Second}} {
		if *d.v == 0 || (d.v != &rc.MaxSendLag && *d.v < 0) {
			*d.v = d.def
		}
	}
	if rc.Abandon == nil {
		rc.Abandon = context.Background()
	}
	return rc
}

// eachMember calls f for every member at once and returns their errors,
// each naming its worker.
func (c *coordinator) eachMember(f func(i int, m *member) error) error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			if err := f(i, m); err != nil {
				errs[i] = fmt.Errorf("worker %d (%s): %w", i+1, m.url, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// probe checks that every worker speaks the API and is free, and measures
// its clock offset.
func (c *coordinator) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second+c.cfg.WaitForWorkers)
	defer cancel()
	err := c.eachMember(func(_ int, m *member) error {
		if err := c.reach(ctx, m); err != nil {
			return fmt.Errorf("not reachable as a brokerbench worker (start one with 'brokerbench worker --listen ADDR'): %w", err)
		}
		if m.info.API != APIVersion {
			return fmt.Errorf("speaks %q, this coordinator %q: run the same brokerbench version everywhere", m.info.API, APIVersion)
		}
		if m.info.Busy {
			return errors.New("busy with another run")
		}
		var err error
		m.off, err = measureOffset(ctx, c.cfg.Client, m.url)
		return err
	})
	if err != nil {
		return err
	}
	for i, m := range c.members {
		c.logf("worker %d %s (%s): clock offset %+.3f ms ± %.3f ms, %d producers, %d consumers", i+1, m.url, m.info.Hostname,
			float64(m.off.Nanos)/1e6, float64(m.off.ErrorNanos)/1e6, len(m.share.producers), len(m.share.consumers))
	}
	return nil
}

// reach reads m's Info, trying again for up to WaitForWorkers while it
// does not answer.
func (c *coordinator) reach(ctx context.Context, m *member) error {
	deadline := time.Now().Add(c.cfg.WaitForWorkers)
	for {
		err := getJSON(ctx, c.cfg.Client, m.url+APIPrefix+PathInfo, &m.info)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// createTopics creates the run's topics, or takes the existing ones. It
// returns the topics and those it created.
func (c *coordinator) createTopics(ctx context.Context) (topics, created []string, err error) {
	if len(c.rc.ExistingTopics) > 0 {
		return c.rc.ExistingTopics, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.rc.SetupTimeout)
	defer cancel()
	w := c.rc.Workload
	for t := range w.Topics {
		name := runner.TopicName(c.rc.ID, t)
		topics = append(topics, name)
		c.logf("creating topic %s (%d partitions)", name, w.PartitionsPerTopic)
		if c.rc.Journal != nil {
			c.rc.Journal.CreatingTopic(name)
		}
		created = append(created, name)
		if err := c.rc.Driver.CreateTopic(ctx, driver.TopicSpec{Name: name, Partitions: w.PartitionsPerTopic, ReplicationFactor: w.ReplicationFactor}); err != nil {
			return topics, created, err
		}
	}
	return topics, created, nil
}

// deleteTopics deletes the topics the run created, unless it keeps them.
func (c *coordinator) deleteTopics(created []string) {
	if c.rc.KeepTopics || len(created) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(c.rc.Abandon, 30*time.Second)
	defer cancel()
	for _, t := range created {
		err := c.rc.Driver.DeleteTopic(ctx, t)
		if err != nil && !errors.Is(err, driver.ErrTopicNotFound) {
			c.res.Warnings = append(c.res.Warnings, err.Error())
			continue
		}
		if c.rc.Journal != nil {
			c.rc.Journal.DeletedTopic(t)
		}
	}
}

// assignment is member i's share of the run.
func (c *coordinator) assignment(i int, topics []string) Assignment {
	m, rc := c.members[i], c.rc
	a := Assignment{
		RunID: rc.ID, Workload: rc.Workload, Driver: c.cfg.Driver, Topics: topics, Existing: len(rc.ExistingTopics) > 0,
		Producers: m.share.producers, Consumers: m.share.consumers,
		IntervalNanos: int64(rc.Interval), DrainTimeoutNanos: int64(rc.DrainTimeout), SetupTimeoutNanos: int64(rc.SetupTimeout),
		MaxSendLagNanos: int64(rc.MaxSendLag), LeaseNanos: int64(c.cfg.Lease),
	}
	if c.cfg.Placement != ByTopic && len(c.members) > 1 {
		owner := c.producerOwners()
		a.SkewNanos = make([]int64, rc.Workload.Producers())
		for p := range a.SkewNanos {
			a.SkewNanos[p] = c.members[owner[p]].off.Nanos - m.off.Nanos
		}
	}
	return a
}

// producerOwners maps each producer id to the index of its member.
func (c *coordinator) producerOwners() []int {
	owner := make([]int, c.rc.Workload.Producers())
	for i, m := range c.members {
		for _, p := range m.share.producers {
			owner[p] = i
		}
	}
	return owner
}

// execute hands out the assignments, starts the workers at one instant
// and follows them until every one has ended.
func (c *coordinator) execute(ctx context.Context, topics []string) error {
	streams, closeStreams := context.WithCancel(context.Background())
	defer closeStreams()
	setupCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err := c.eachMember(func(i int, m *member) error {
		return postJSON(setupCtx, c.cfg.Client, m.url+APIPrefix+PathRun, c.assignment(i, topics), nil)
	})
	cancel()
	if err != nil {
		c.stopAll()
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	for i := range c.members {
		go c.follow(streams, i)
	}
	go c.renewLeases(streams)
	if err := c.awaitPrepared(ctx); err != nil {
		c.stopAll()
		c.awaitEnd(time.Now().Add(c.cfg.Lease))
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	if err := c.start(ctx); err != nil {
		c.stopAll()
		c.awaitEnd(time.Now().Add(c.cfg.Lease))
		return fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	return c.followRun(ctx)
}

// follow reads member i's event stream into c.events until its last
// event, or reports how it ended early.
func (c *coordinator) follow(ctx context.Context, i int) {
	m := c.members[i]
	send := func(me memberEvent) {
		select {
		case c.events <- me:
		case <-ctx.Done():
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url+APIPrefix+PathEvents, nil)
	if err != nil {
		send(memberEvent{i: i, err: err})
		return
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		send(memberEvent{i: i, err: err})
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		send(memberEvent{i: i, err: fmt.Errorf("event stream: %s: %s", resp.Status, strings.TrimSpace(string(body)))})
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), maxBody)
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			send(memberEvent{i: i, err: fmt.Errorf("event stream: not %s's: %w", APIVersion, err)})
			return
		}
		send(memberEvent{i: i, ev: ev})
		if ev.Kind == Done || ev.Kind == Failed {
			return
		}
	}
	err = sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	send(memberEvent{i: i, err: fmt.Errorf("event stream broke: %w", err)})
}

// renewLeases renews every worker's lease until ctx ends.
func (c *coordinator) renewLeases(ctx context.Context) {
	tick := time.NewTicker(c.cfg.Lease / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, m := range c.members {
				go func() {
					rctx, cancel := context.WithTimeout(ctx, c.cfg.Lease/4)
					defer cancel()
					_ = postJSON(rctx, c.cfg.Client, m.url+APIPrefix+PathLease, nil, nil)
				}()
			}
		}
	}
}

// command POSTs path to every member that has not ended.
func (c *coordinator) command(path string, body func(*member) any) {
	ctx, cancel := context.WithTimeout(c.rc.Abandon, 10*time.Second)
	defer cancel()
	err := c.eachMember(func(_ int, m *member) error {
		if m.ended {
			return nil
		}
		var b any
		if body != nil {
			b = body(m)
		}
		return postJSON(ctx, c.cfg.Client, m.url+APIPrefix+path, b, nil)
	})
	if err != nil {
		c.logf("%v", err)
	}
}

// stopAll tells every worker still running to stop.
func (c *coordinator) stopAll() {
	if !c.stopped {
		c.stopped = true
		c.command(PathStop, nil)
	}
}

// handle applies one event to its member and reports whether it ended
// the member.
func (c *coordinator) handle(me memberEvent) {
	m := c.members[me.i]
	if m.ended {
		return
	}
	if me.err != nil {
		m.ended, m.err = true, fmt.Sprintf("lost after %.1f s: %v", m.lastIntervalTime, me.err)
		c.logf("worker %d (%s) %s", me.i+1, m.url, m.err)
		return
	}
	switch ev := me.ev; ev.Kind {
	case Prepared:
		m.prepared = true
	case IntervalDone:
		if ev.Interval != nil && ev.Histograms != nil {
			m.intervals = append(m.intervals, partInterval{iv: *ev.Interval, h: *ev.Histograms})
			m.lastIntervalTime = ev.Interval.EndSeconds
		}
	case SentAll:
		m.sentAll = true
	case Draining:
		m.draining = true
	case Done:
		m.ended, m.part = true, ev.Part
		if ev.Part == nil || ev.Part.Run == nil {
			m.part, m.err = nil, "ended without its results"
		}
	case Failed:
		m.ended, m.err = true, "failed: "+ev.Error
		c.logf("worker %d (%s) %s", me.i+1, m.url, m.err)
	}
}

// awaitPrepared waits until every worker is prepared; a worker that fails
// or is lost meanwhile fails the run.
func (c *coordinator) awaitPrepared(ctx context.Context) error {
	timeout := time.NewTimer(c.rc.SetupTimeout + 15*time.Second)
	defer timeout.Stop()
	c.logf("waiting for %d workers to prepare", len(c.members))
	for {
		ready := 0
		for i, m := range c.members {
			if m.ended {
				return fmt.Errorf("worker %d (%s) %s", i+1, m.url, m.err)
			}
			if m.prepared {
				ready++
			}
		}
		if ready == len(c.members) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-timeout.C:
			return fmt.Errorf("%d of %d workers prepared within %s", ready, len(c.members), c.rc.SetupTimeout+15*time.Second)
		case me := <-c.events:
			c.handle(me)
		}
	}
}

// start names the barrier's start instant: far enough ahead that every
// worker hears of it in time, given to each on its own clock.
func (c *coordinator) start(ctx context.Context) error {
	var slowest int64
	for _, m := range c.members {
		slowest = max(slowest, m.off.RoundTripNanos)
	}
	at := clock.Now() + max(int64(300*time.Millisecond), 20*slowest)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(at-clock.Now()))
	defer cancel()
	c.logf("starting %d workers together", len(c.members))
	return c.eachMember(func(_ int, m *member) error {
		return postJSON(ctx, c.cfg.Client, m.url+APIPrefix+PathStart, StartCommand{StartAt: at + m.off.Nanos}, nil)
	})
}

// followRun follows the workers from the start until each has ended:
// merging intervals as they complete, telling them when all producers
// finished and when the subscriptions caught up, stopping them on an
// interrupt or when the run overstays its time.
func (c *coordinator) followRun(ctx context.Context) error {
	w := c.rc.Workload
	overdue := time.NewTimer(w.Warmup + w.Duration + c.rc.DrainTimeout + c.rc.SetupTimeout + time.Minute)
	defer overdue.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	done := ctx.Done()
	var interrupted error
	var giveUp <-chan time.Time
	for !c.allEnded() {
		select {
		case me := <-c.events:
			c.handle(me)
			c.mergeReady()
			c.tellAllSent()
			if me.err != nil || me.ev.Kind == Failed {
				// A worker lost: the others go on; its share is missing
				// from what follows.
				c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("worker %d (%s) %s", me.i+1, c.members[me.i].url, c.members[me.i].err))
			}
		case <-tick.C:
			c.checkCaughtUp()
		case <-done:
			done, interrupted = nil, context.Cause(ctx)
			c.logf("interrupted: stopping the workers (interrupt again to abandon)")
			c.stopAll()
			giveUp = time.After(c.rc.InterruptDrain + 15*time.Second)
		case <-overdue.C:
			c.res.Warnings = append(c.res.Warnings, "the workers overstayed the run's time: stopped")
			c.stopAll()
			giveUp = time.After(c.rc.InterruptDrain + 15*time.Second)
		case <-giveUp:
			c.abandonRemaining("did not finish after being stopped")
		case <-c.rc.Abandon.Done():
			c.abandonRemaining("abandoned")
		}
	}
	c.mergeRemaining()
	if interrupted != nil {
		c.res.Partial, c.res.PartialReason = true, "interrupted: "+interrupted.Error()
		return interrupted
	}
	return nil
}

func (c *coordinator) allEnded() bool {
	for _, m := range c.members {
		if !m.ended {
			return false
		}
	}
	return true
}

// abandonRemaining gives up on every member that has not ended.
func (c *coordinator) abandonRemaining(why string) {
	for i, m := range c.members {
		if !m.ended {
			m.ended, m.err = true, why
			c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("worker %d (%s) %s", i+1, m.url, why))
		}
	}
}

// tellAllSent tells every worker, once, when all producers have sent
// their message limit.
func (c *coordinator) tellAllSent() {
	if c.allSentTold || c.stopped {
		return
	}
	for _, m := range c.members {
		if !m.sentAll {
			return
		}
	}
	c.allSentTold = true
	c.command(PathAllSent, nil)
}

// checkCaughtUp tells every worker to end its drain once all have
// stopped producing and the subscriptions, over all workers, hold every
// message the broker stored (or, without the broker's count, every one
// acknowledged).
func (c *coordinator) checkCaughtUp() {
	if c.caught {
		return
	}
	for _, m := range c.members {
		if !m.draining && !m.ended {
			return
		}
	}
	var distinct, acked int64
	ctx, cancel := context.WithTimeout(c.rc.Abandon, 2*time.Second)
	defer cancel()
	var mu sync.Mutex
	err := c.eachMember(func(_ int, m *member) error {
		if m.ended {
			return nil
		}
		var p Progress
		if err := getJSON(ctx, c.cfg.Client, m.url+APIPrefix+PathProgress, &p); err != nil {
			return err
		}
		mu.Lock()
		distinct, acked = distinct+p.Distinct, acked+p.Acked
		mu.Unlock()
		return nil
	})
	if err != nil {
		return
	}
	for _, m := range c.members {
		if m.ended && m.part != nil {
			distinct += sumDistinct(m.part.Deliveries)
			acked += m.part.Run.Counts.Acked
		}
	}
	w := c.rc.Workload
	subs := int64(w.SubscriptionsPerTopic)
	want := acked * subs
	if sc, ok := c.rc.Driver.(driver.WrittenCounter); ok && len(c.rc.ExistingTopics) == 0 && w.Producers() > 0 {
		stored, err := c.stored(ctx, sc)
		if err != nil || stored != c.storedSeen {
			c.storedSeen = stored // not settled yet
			return
		}
		want = stored * subs
	}
	consumers := w.Topics * w.SubscriptionsPerTopic * w.ConsumersPerSubscription
	if consumers == 0 || w.Producers() == 0 || distinct >= want {
		c.caught = true
		c.command(PathCaughtUp, nil)
	}
}

func sumDistinct(subs []*accounting.Subscription) int64 {
	var n int64
	for _, s := range subs {
		if s != nil {
			n += s.Distinct()
		}
	}
	return n
}

// stored is the broker's count of messages in the run's topics.
func (c *coordinator) stored(ctx context.Context, sc driver.WrittenCounter) (int64, error) {
	var n int64
	for t := range c.rc.Workload.Topics {
		k, err := sc.Written(ctx, runner.TopicName(c.rc.ID, t))
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// awaitEnd waits until every member ended or the deadline passes.
func (c *coordinator) awaitEnd(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for !c.allEnded() {
		select {
		case me := <-c.events:
			c.handle(me)
		case <-t.C:
			c.abandonRemaining("did not end after being stopped")
		}
	}
}

func (c *coordinator) parts() int {
	n := 0
	for _, m := range c.members {
		if m.part != nil {
			n++
		}
	}
	return n
}
