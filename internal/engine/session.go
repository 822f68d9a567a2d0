package engine

import (
	"context"
	"fmt"
	goio "io"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/output"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// session makes runs on a target through the one sequence every command
// shares: connect to the broker, clean what earlier runs left there (once
// per broker), warm up a cluster just started, start its faults and heal
// them afterwards, run it with the two-stage interrupt (the first stops
// the producers and drains briefly, the second abandons the broker),
// close the driver within a bound, describe the results and hand the run
// to its outputs: live metrics, progress lines, the run's own (summary,
// files), the topic registry and the journal. run and study both make
// their runs through it, so they stop, record and clean up the same way.
type session struct {
	io  IO
	tgt *Target
	sig *Interrupts
	// live, if set, serves the runs' intervals as they come.
	live *livemetrics.Server
	// progress prints every interval's line to io.Err.
	progress bool
	// warn receives what the registry and the journal could not do,
	// also when io.Err is silenced.
	warn goio.Writer
	// cleaned holds the brokers whose leftovers were cleaned.
	cleaned map[string]bool
}

func newSession(io IO, tgt *Target, sig *Interrupts) *session {
	return &session{io: io, tgt: tgt, sig: sig, warn: io.Err, cleaned: map[string]bool{}}
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
	// outputs are the run's own (summary, results files), stopped after
	// live metrics and progress, before the registry and the journal.
	outputs []output.Output
	// price, if set, is the price of the system the run measured.
	price *results.Price
}

// run makes one run and hands it to its outputs once the driver is
// closed. It returns what was measured (nil if nothing), what the
// outputs that store it could not store, and the run's error. An
// interrupt during the warm-up of a cluster just started is Interrupted.
func (s *session) run(spec runSpec) (res *results.Run, storeErr, err error) {
	res, outs, err := s.measure(spec)
	if outs == nil {
		return res, nil, err
	}
	if res != nil && spec.price != nil {
		res.Price = spec.price
	}
	return res, outs.Stop(res), err
}

// measure makes one run on the target and returns what it measured and
// its started outputs (nil if the run did not get so far).
func (s *session) measure(spec runSpec) (*results.Run, *output.Manager, error) {
	ctx := s.sig.Stop
	drv, env, err := s.tgt.connect(ctx, spec.dc)
	if err != nil {
		return nil, nil, err
	}
	defer closeBounded(drv, s.sig.Abandon)
	target, err := s.prepare(ctx, drv, env, spec)
	if err != nil {
		return nil, nil, err
	}
	cfg := spec.config
	if spec.id == "" {
		spec.id = runner.NewID()
	}
	head := &results.Run{Schema: results.Schema, ID: spec.id, Workload: spec.w, IntervalSeconds: cfg.Interval.Seconds(), StartedAt: time.Now().UTC()}
	if cfg.Interval == 0 {
		head.IntervalSeconds = 1
	}
	describe(head, env, spec.dc, drv, spec.w)
	outs := s.outputs(spec, target)
	if err := outs.Start(head); err != nil {
		return nil, nil, badInput(err)
	}
	schedule, err := s.tgt.faultsFor(spec.w, spec.dc, drv)
	if err != nil {
		return nil, outs, err
	}
	if len(schedule) > 0 {
		defer s.tgt.heal(context.WithoutCancel(ctx))
	}
	var running map[int]int // the local nodes' processes, without faults to stop them
	if s.tgt.cluster != nil && len(schedule) == 0 {
		running = s.tgt.cluster.RunningPIDs()
	}
	cfg.Workload, cfg.Driver, cfg.ID, cfg.Journal, cfg.Faults = spec.w, drv, spec.id, outs, schedule
	cfg.SampleSystem, cfg.Abandon = s.tgt.systemSampler(), s.sig.Abandon
	exec := spec.exec
	if exec == nil {
		exec = runner.Run
	}
	res, err := exec(ctx, cfg)
	if res != nil {
		describe(res, env, spec.dc, drv, spec.w)
	}
	if running != nil {
		if stopped := s.tgt.cluster.StoppedSince(running); len(stopped) > 0 {
			if res != nil {
				res.BrokerStopped = stopped
			}
			if err != nil {
				err = fmt.Errorf("%w (the broker stopped during the run: %s)", err, strings.Join(stopped, "; "))
			}
		}
	}
	return res, outs, err
}

// prepare readies the broker drv is connected to for a run: it cleans
// what dead runs left there (once per broker) and warms up a cluster just
// started. It returns the broker's name in the topic registry.
func (s *session) prepare(ctx context.Context, drv driver.Driver, env results.Environment, spec runSpec) (string, error) {
	target := targetKey(env, spec.dc.Source)
	if !s.cleaned[target] {
		cleanLeftovers(ctx, s.io, drv, spec.dc.Name, target)
		s.cleaned[target] = true
	}
	if err := warmUpIfFresh(ctx, s.io, s.tgt, drv, spec.dc.Name, spec.w, target); err != nil {
		return "", WithKind(Interrupted, err)
	}
	return target, nil
}

// outputs are the outputs of a run: live metrics and progress lines if
// the session shows them, the run's own, the topic registry and the
// journal if it has one.
func (s *session) outputs(spec runSpec, target string) *output.Manager {
	var outs []output.Output
	if s.live != nil {
		outs = append(outs, output.Live{Server: s.live, Name: spec.name})
	}
	if s.progress {
		outs = append(outs, output.Progress{W: s.io.Err})
	}
	outs = append(outs, spec.outputs...)
	outs = append(outs, &topicRegistry{target: target, journal: spec.journal, keepTopics: spec.keepTopics})
	if spec.journal != "" {
		outs = append(outs, &output.Journal{Path: spec.journal})
	}
	return output.NewManager(s.warn, outs...)
}
