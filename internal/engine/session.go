package engine

import (
	"context"
	"fmt"

	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// session makes runs on a target through the one sequence every command
// shares: connect to the broker, clean what earlier runs left there (once
// per broker), warm up a cluster just started, keep the run's journal and
// topic registry, start its faults and heal them afterwards, run it with
// the two-stage interrupt (the first stops the producers and drains
// briefly, the second abandons the broker), close the driver within a
// bound, and describe the results. run and study both make their runs
// through it, so they stop, record and clean up the same way.
type session struct {
	io  IO
	tgt *Target
	sig *Interrupts
	// live, if set, serves the runs' intervals as they come.
	live *livemetrics.Server
	// progress prints every interval's line to io.Err.
	progress bool
	// cleaned holds the brokers whose leftovers were cleaned.
	cleaned map[string]bool
}

func newSession(io IO, tgt *Target, sig *Interrupts) *session {
	return &session{io: io, tgt: tgt, sig: sig, cleaned: map[string]bool{}}
}

// runSpec is one run of a session.
type runSpec struct {
	// name labels the run in live metrics.
	name string
	w    *workload.Workload
	dc   *workload.DriverConfig
	// id is the run's id; empty for a new one.
	id string
	// journal is the path of the run's journal; empty for none.
	journal string
	// keepTopics: the run's topics stay on purpose, so the registry does
	// not count them as left behind.
	keepTopics bool
	// config holds the runner's settings that are not the session's:
	// intervals, timeouts, the send-lag limit, existing topics.
	config runner.Config
	// exec makes the run (or runs: a max-rate search, a distributed run)
	// with the complete config; nil for runner.Run.
	exec func(ctx context.Context, cfg runner.Config) (*results.Run, error)
}

// run makes one run. It returns what was measured (nil if nothing), the
// run's record, which the caller finishes once the results are written
// (nil if the run did not get so far), and the run's error. An interrupt
// during the warm-up of a cluster just started is ExitInterrupted.
func (s *session) run(spec runSpec) (*results.Run, *runRecord, error) {
	ctx := s.sig.Stop
	drv, env, err := s.tgt.connect(ctx, spec.dc)
	if err != nil {
		return nil, nil, err
	}
	defer closeBounded(drv, s.sig.Abandon)
	target := targetKey(env, spec.dc.Source)
	if !s.cleaned[target] {
		cleanLeftovers(ctx, s.io, drv, spec.dc.Name, target)
		s.cleaned[target] = true
	}
	if err := warmUpIfFresh(ctx, s.io, s.tgt, drv, spec.dc.Name, spec.w, target); err != nil {
		return nil, nil, WithKind(Interrupted, err)
	}
	id := spec.id
	if id == "" {
		id = runner.NewID()
	}
	cfg := spec.config
	head := &results.Run{Schema: results.Schema, ID: id, Workload: spec.w, IntervalSeconds: cfg.Interval.Seconds()}
	if cfg.Interval == 0 {
		head.IntervalSeconds = 1
	}
	describe(head, env, spec.dc, drv, spec.w)
	rec, err := startRecord(head, target, spec.journal, spec.keepTopics)
	if err != nil {
		return nil, nil, err
	}
	schedule, err := s.tgt.faultsFor(spec.w, drv)
	if err != nil {
		return nil, rec, err
	}
	if len(schedule) > 0 {
		defer s.tgt.heal(context.WithoutCancel(ctx))
	}
	cfg.Workload, cfg.Driver, cfg.ID, cfg.Journal, cfg.Faults = spec.w, drv, id, rec, schedule
	cfg.SampleSystem, cfg.Abandon = s.tgt.systemSampler(), s.sig.Abandon
	if s.progress {
		cfg.Progress = func(iv results.Interval) { fmt.Fprintln(s.io.Err, results.ProgressLine(iv)) }
	}
	if s.live != nil {
		s.live.Begin(spec.name, spec.dc.Name)
		defer s.live.End()
		cfg.Progress = observing(s.live, cfg.Progress)
	}
	exec := spec.exec
	if exec == nil {
		exec = runner.Run
	}
	res, err := exec(ctx, cfg)
	if res != nil {
		describe(res, env, spec.dc, drv, spec.w)
	}
	return res, rec, err
}

// observing returns a progress function that hands each interval to live
// and then to next, if any.
func observing(live *livemetrics.Server, next func(results.Interval)) func(results.Interval) {
	return func(iv results.Interval) {
		live.Observe(iv)
		if next != nil {
			next(iv)
		}
	}
}
