package distributed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
)

// Worker serves the worker API (see the package doc): it runs one
// assignment at a time. Its fields must be set before Handler is called.
type Worker struct {
	// Connect makes the driver an assignment names.
	Connect func(ctx context.Context, src DriverSource) (driver.Driver, error)
	// Sampler, if set, returns a new sampler of this machine's resource
	// use for a run's intervals.
	Sampler func() func() *results.System
	// Version is reported in Info.
	Version string
	// Log receives one line per run phase; nil discards them.
	Log io.Writer
	// AbandonAfter bounds how long a stopped run may take to finish
	// before the worker gives up waiting on the broker (default 20 s).
	AbandonAfter time.Duration

	mu  sync.Mutex
	cur *workerRun
	// finished is closed after the first run ended and its end was
	// streamed or its coordinator lost.
	finished     chan struct{}
	finishedOnce sync.Once
}

// workerRun is the assignment a worker is running.
type workerRun struct {
	a       Assignment
	queue   eventQueue
	startAt chan int64
	// allSent and caughtUp are closed once each, by their commands.
	allSent, caughtUp         chan struct{}
	allSentOnce, caughtUpOnce sync.Once
	// stop interrupts the run (producers stop, bounded drain).
	stop      context.CancelCauseFunc
	lease     atomic.Int64 // clock.Now of the last renewal
	streaming atomic.Bool
	ended     chan struct{} // closed when the run returned
	part      atomic.Pointer[runner.Part]
	draining  atomic.Bool
}

// Finished is closed once the worker's first run has ended and its last
// event was sent (or its coordinator was lost): a worker that serves one
// run (brokerbench worker --once) may then exit.
func (w *Worker) Finished() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished == nil {
		w.finished = make(chan struct{})
	}
	return w.finished
}

func (w *Worker) logf(format string, args ...any) {
	if w.Log != nil {
		fmt.Fprintf(w.Log, format+"\n", args...)
	}
}

// Handler returns the API's HTTP handler.
func (w *Worker) Handler() http.Handler {
	w.Finished() // makes the channel
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+APIPrefix+PathInfo, w.info)
	mux.HandleFunc("GET "+APIPrefix+PathTime, func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, TimeReply{Now: clock.Now()})
	})
	mux.HandleFunc("POST "+APIPrefix+PathRun, w.begin)
	mux.HandleFunc("GET "+APIPrefix+PathEvents, w.events)
	mux.HandleFunc("GET "+APIPrefix+PathProgress, w.progress)
	mux.HandleFunc("POST "+APIPrefix+PathStart, w.command(func(r *workerRun, body []byte) error {
		var cmd StartCommand
		if err := json.Unmarshal(body, &cmd); err != nil || cmd.StartAt <= 0 {
			return fmt.Errorf("a start command needs {\"startAt\": nanoseconds}: %v", err)
		}
		select {
		case r.startAt <- cmd.StartAt:
			return nil
		default:
			return errors.New("the run was already given its start")
		}
	}))
	mux.HandleFunc("POST "+APIPrefix+PathAllSent, w.command(func(r *workerRun, _ []byte) error {
		r.allSentOnce.Do(func() { close(r.allSent) })
		return nil
	}))
	mux.HandleFunc("POST "+APIPrefix+PathCaughtUp, w.command(func(r *workerRun, _ []byte) error {
		r.caughtUpOnce.Do(func() { close(r.caughtUp) })
		return nil
	}))
	mux.HandleFunc("POST "+APIPrefix+PathLease, w.command(func(r *workerRun, _ []byte) error {
		r.lease.Store(clock.Now())
		return nil
	}))
	mux.HandleFunc("POST "+APIPrefix+PathStop, w.command(func(r *workerRun, _ []byte) error {
		r.stop(errors.New("stopped by the coordinator"))
		return nil
	}))
	return mux
}

func (w *Worker) info(rw http.ResponseWriter, _ *http.Request) {
	host, _ := os.Hostname()
	writeJSON(rw, http.StatusOK, Info{API: APIVersion, Version: w.Version, Hostname: host, Cores: runtime.NumCPU(), Busy: w.current() != nil})
}

// current returns the run in progress, or nil.
func (w *Worker) current() *workerRun {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// currentOr404 returns the run in progress, or replies 404 and returns
// nil.
func (w *Worker) currentOr404(rw http.ResponseWriter) *workerRun {
	r := w.current()
	if r == nil {
		httpError(rw, http.StatusNotFound, "no run in progress")
	}
	return r
}

func (w *Worker) progress(rw http.ResponseWriter, _ *http.Request) {
	r := w.currentOr404(rw)
	if r == nil {
		return
	}
	var p Progress
	if part := r.part.Load(); part != nil {
		p.Distinct, p.Acked = part.Progress()
	}
	p.Draining = r.draining.Load()
	writeJSON(rw, http.StatusOK, p)
}

// command returns a handler applying f to the current run.
func (w *Worker) command(f func(*workerRun, []byte) error) http.HandlerFunc {
	return func(rw http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
		if err != nil {
			httpError(rw, http.StatusBadRequest, "read body: %v", err)
			return
		}
		r := w.currentOr404(rw)
		if r == nil {
			return
		}
		if err := f(r, body); err != nil {
			httpError(rw, http.StatusConflict, "%v", err)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	}
}

// begin takes an assignment and starts preparing it.
func (w *Worker) begin(rw http.ResponseWriter, req *http.Request) {
	a, err := decodeAssignment(io.LimitReader(req.Body, maxBody))
	if err != nil {
		httpError(rw, http.StatusBadRequest, "%v", err)
		return
	}
	w.mu.Lock()
	if w.cur != nil {
		w.mu.Unlock()
		httpError(rw, http.StatusConflict, "busy with run %s", w.cur.a.RunID)
		return
	}
	ctx, stop := context.WithCancelCause(context.Background())
	r := &workerRun{a: a, startAt: make(chan int64, 1), allSent: make(chan struct{}), caughtUp: make(chan struct{}), stop: stop, ended: make(chan struct{})}
	r.queue.init()
	r.lease.Store(clock.Now())
	w.cur = r
	w.mu.Unlock()
	w.logf("run %s: %d producers, %d consumers", a.RunID, len(a.Producers), len(a.Consumers))
	go w.watchLease(ctx, r)
	go w.execute(ctx, r)
	writeJSON(rw, http.StatusAccepted, map[string]string{"runId": a.RunID})
}

// decodeAssignment reads an assignment and checks that the worker can run
// it.
func decodeAssignment(r io.Reader) (Assignment, error) {
	var a Assignment
	if err := json.NewDecoder(r).Decode(&a); err != nil {
		return a, fmt.Errorf("the body is not an assignment: %w", err)
	}
	if err := a.check(); err != nil {
		return a, fmt.Errorf("assignment: %w", err)
	}
	return a, nil
}

// check rejects an assignment the worker cannot run.
func (a *Assignment) check() error {
	switch {
	case a.RunID == "":
		return errors.New("no runId")
	case a.Workload == nil:
		return errors.New("no workload")
	case a.IntervalNanos < int64(10*time.Millisecond):
		return errors.New("intervalNanos must be at least 10 ms")
	case a.LeaseNanos <= 0:
		return errors.New("leaseNanos must be positive")
	case len(a.SkewNanos) != 0 && len(a.SkewNanos) != a.Workload.Producers():
		return fmt.Errorf("skewNanos has %d entries for %d producers", len(a.SkewNanos), a.Workload.Producers())
	}
	if err := a.Workload.Validate(); err != nil {
		return err
	}
	return nil
}

// watchLease stops the run when the coordinator stops renewing its lease.
func (w *Worker) watchLease(ctx context.Context, r *workerRun) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.ended:
			return
		case <-tick.C:
			if silent := time.Duration(clock.Now() - r.lease.Load()); silent > time.Duration(r.a.LeaseNanos) && ctx.Err() == nil {
				w.logf("run %s: no word from the coordinator for %s: stopping", r.a.RunID, silent.Round(time.Millisecond))
				r.stop(fmt.Errorf("coordinator lost: no lease renewal for %s", silent.Round(time.Millisecond)))
			}
		}
	}
}

// execute makes the run and queues its events.
func (w *Worker) execute(ctx context.Context, r *workerRun) {
	defer w.releaseUnfollowed(r)
	defer close(r.ended)
	abandon, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	after := w.AbandonAfter
	if after <= 0 {
		after = 20 * time.Second
	}
	// Once stopped, the run has a bounded time to finish.
	go func() {
		select {
		case <-ctx.Done():
			t := time.NewTimer(after)
			defer t.Stop()
			select {
			case <-t.C:
				giveUp()
			case <-r.ended:
			}
		case <-r.ended:
		}
	}()
	a := r.a
	drv, err := w.Connect(ctx, a.Driver)
	if err != nil {
		r.queue.push(Event{Kind: Failed, Error: "connect: " + err.Error()})
		return
	}
	defer drv.Close()
	part := &runner.Part{
		Topics: a.Topics, Producers: a.Producers, Consumers: a.Consumers, SkewNanos: a.SkewNanos,
		AllSent: r.allSent, CaughtUp: r.caughtUp,
		SentAll: func() { r.queue.push(Event{Kind: SentAll}) },
		Draining: func() {
			r.draining.Store(true)
			r.queue.push(Event{Kind: Draining})
		},
		Ready: func(ctx context.Context) (int64, error) {
			r.queue.push(Event{Kind: Prepared})
			select {
			case at := <-r.startAt:
				w.logf("run %s: starts in %s", a.RunID, time.Duration(at-clock.Now()).Round(time.Millisecond))
				return at, nil
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			}
		},
	}
	r.part.Store(part)
	cfg := runner.Config{
		Workload: a.Workload, Driver: drv, ID: a.RunID, Part: part, Abandon: abandon,
		Interval: time.Duration(a.IntervalNanos), DrainTimeout: time.Duration(a.DrainTimeoutNanos),
		SetupTimeout: time.Duration(a.SetupTimeoutNanos), MaxSendLag: time.Duration(a.MaxSendLagNanos),
		Journal: partJournal{r: r, part: part},
	}
	if a.Existing {
		cfg.ExistingTopics = a.Topics
	}
	if w.Sampler != nil {
		cfg.SampleSystem = w.Sampler()
	}
	res, err := runner.Run(ctx, cfg)
	if res == nil {
		r.queue.push(Event{Kind: Failed, Error: err.Error()})
		return
	}
	pr := &PartResult{Run: res, StartLateNanos: int64(part.StartLate), Outcomes: part.Outcomes, Deliveries: part.Deliveries}
	if err != nil {
		pr.RunError = err.Error()
	}
	w.logf("run %s: done, %d sent, %d consumed", a.RunID, res.Counts.Sent, res.Counts.Consumed)
	r.queue.push(Event{Kind: Done, Part: pr})
}

// partJournal streams a part's intervals as events.
type partJournal struct {
	r    *workerRun
	part *runner.Part
}

func (j partJournal) CreatingTopic(string) {}
func (j partJournal) DeletedTopic(string)  {}
func (j partJournal) Interval(iv results.Interval, h results.Histograms) {
	distinct, _ := j.part.Progress()
	j.r.queue.push(Event{Kind: IntervalDone, Interval: &iv, Histograms: &h, Distinct: distinct})
}

// events streams the run's events as JSON lines until its last. A
// coordinator that goes away stops the run.
func (w *Worker) events(rw http.ResponseWriter, req *http.Request) {
	r := w.currentOr404(rw)
	if r == nil {
		return
	}
	if !r.streaming.CompareAndSwap(false, true) {
		httpError(rw, http.StatusConflict, "the run's events are already being streamed")
		return
	}
	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.WriteHeader(http.StatusOK)
	flusher, _ := rw.(http.Flusher)
	enc := json.NewEncoder(rw)
	for next := 0; ; next++ {
		ev, ok := r.queue.wait(req.Context(), next)
		if !ok {
			w.logf("run %s: the coordinator closed its event stream: stopping", r.a.RunID)
			r.stop(errors.New("coordinator lost: its event stream closed"))
			w.release(r)
			return
		}
		if err := enc.Encode(ev); err != nil {
			r.stop(fmt.Errorf("coordinator lost: %w", err))
			w.release(r)
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if ev.Kind == Done || ev.Kind == Failed {
			w.release(r)
			return
		}
	}
}

// release makes the worker free again once r has ended, and marks the
// worker finished.
func (w *Worker) release(r *workerRun) {
	go func() {
		<-r.ended
		w.mu.Lock()
		if w.cur == r {
			w.cur = nil
		}
		w.mu.Unlock()
		w.finishedOnce.Do(func() { close(w.finished) })
	}()
}

// releaseUnfollowed releases an ended run whose events nobody streamed
// within its lease: its coordinator will not come for them.
func (w *Worker) releaseUnfollowed(r *workerRun) {
	deadline := time.Now().Add(time.Duration(r.a.LeaseNanos))
	for !r.streaming.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !r.streaming.Load() {
		w.logf("run %s: ended, and no coordinator followed it", r.a.RunID)
		w.release(r)
	}
}

// eventQueue is an unbounded queue of events that one reader follows by
// index: pushing never blocks the run.
type eventQueue struct {
	mu      sync.Mutex
	events  []Event
	changed chan struct{}
}

func (q *eventQueue) init() { q.changed = make(chan struct{}) }

func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events = append(q.events, ev)
	close(q.changed)
	q.changed = make(chan struct{})
}

// wait returns event i once it exists, or false when ctx ends first.
func (q *eventQueue) wait(ctx context.Context, i int) (Event, bool) {
	for {
		q.mu.Lock()
		if i < len(q.events) {
			ev := q.events[i]
			q.mu.Unlock()
			return ev, true
		}
		ch := q.changed
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return Event{}, false
		case <-ch:
		}
	}
}

// Stop stops the run in progress, if any, and waits until it has ended or
// ctx ends: a worker told to exit leaves no load behind.
func (w *Worker) Stop(ctx context.Context, cause error) {
	r := w.current()
	if r == nil {
		return
	}
	r.stop(cause)
	select {
	case <-r.ended:
	case <-ctx.Done():
	}
}
