package engine

import (
	"context"
	"errors"
	"fmt"
	goio "io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/output"
	"github.com/brokerbench/brokerbench/internal/report"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/study"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// StudyOptions are what a study is asked to do besides its study file.
// DefaultStudyOptions holds every default.
type StudyOptions struct {
	// List prints the planned runs instead of making them.
	List bool
	// Scale is quick or full.
	Scale string
	// Out is the results directory; "": results/<study>-<scale>.
	Out string
	// Broker and BrokerMetrics are as RunOptions'.
	Broker        string
	BrokerMetrics []string
	// Progress prints a line per interval of every run.
	Progress bool
	// Quiet says nothing along the way: only the study's outcome.
	Quiet bool
	// MetricsAddr, if set, serves live metrics of the run in progress.
	MetricsAddr string
	Local       LocalOptions
	// History is where the study's runs are recorded once written.
	History history.Recording
}

// DefaultStudyOptions are the options of a study the user says nothing
// about.
func DefaultStudyOptions() StudyOptions {
	return StudyOptions{Scale: string(study.Quick), Local: localTarget(1)}
}

// studyPlan is a study's runs on its target, checked before any of them.
type studyPlan struct {
	s     *workload.Study
	scale study.Scale
	runs  []study.Run
	tgt   *Target
	// chat receives what is said along the way; --quiet silences it.
	chat IO
}

// checkWorkers says why runs of w cannot be spread over n workers.
func checkWorkers(w *workload.Workload, n int) error {
	return errors.Join(distributed.CheckWorkload(w), distributed.CheckSpread(w, n, distributed.Spread))
}

// planStudy reads the study, plans its runs on the target and checks them:
// a local cluster that does not fit a setup, and may not be replaced,
// stops the study before its first run.
func planStudy(ctx context.Context, io IO, path string, o *StudyOptions) (*studyPlan, error) {
	scale, err := study.ParseScale(o.Scale)
	if err != nil {
		return nil, badInput(err)
	}
	s, err := workload.LoadStudy(path)
	if err != nil {
		return nil, err
	}
	if err := o.Local.Validate(); err != nil {
		return nil, err
	}
	if err := checkMetricsURLs(o.BrokerMetrics); err != nil {
		return nil, err
	}
	p := &studyPlan{s: s, scale: scale, chat: io}
	if o.Quiet {
		p.chat.Err = goio.Discard
	}
	p.tgt = newTarget(p.chat, o.Broker, o.Local)
	p.tgt.metricsURLs = o.BrokerMetrics
	// A local target builds clusters of any size up to MaxLocalBrokers.
	brokers := MaxLocalBrokers
	switch {
	case o.Broker != "" && o.List:
		// --list never contacts a broker: every setup is listed as if the
		// cluster were large enough.
		brokers = math.MaxInt32
		fmt.Fprintln(io.Err, "note: --list does not contact the cluster; setups are not checked against its size")
	case o.Broker != "":
		if brokers, err = p.tgt.brokers(ctx, probeDriver(s)); err != nil {
			return nil, err
		}
	}
	if p.runs, err = study.Plan(s, scale, study.Target{Brokers: brokers, Local: o.Broker == "", CheckWorkers: checkWorkers}); err != nil {
		return nil, err
	}
	if err := checkStudy(s, p.runs, p.tgt); err != nil {
		return nil, err
	}
	if o.Broker != "" || o.List {
		return p, nil
	}
	for _, r := range p.runs {
		if r.Skip != "" {
			continue
		}
		p.tgt.wantSetup(r.Setup, r.Workload)
		if err := p.tgt.checkLocal(r.Driver); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// list prints the plan: every run, with its durations or why it is
// skipped.
func (p *studyPlan) list(out goio.Writer) {
	for i, r := range p.runs {
		state := fmt.Sprintf("%s warmup + %s", r.Workload.Warmup, r.Workload.Duration)
		if r.Skip != "" {
			state = "SKIP: " + r.Skip
		}
		fmt.Fprintf(out, "%3d  %-50s %s\n", i+1, r.Key, state)
	}
}

// Study makes every run of the study in the file at path (or lists them),
// writing their results, the study's index and its report into one
// directory, and returns its outcome as an error of its Kind: an
// interrupted study resumes with the same options.
func Study(ctx context.Context, io IO, path string, o StudyOptions) error {
	p, err := planStudy(ctx, io, path, &o)
	if err != nil {
		return err
	}
	if o.List {
		p.list(io.Out)
		return nil
	}
	s, runs, tgt, chat, scale := p.s, p.runs, p.tgt, p.chat, p.scale
	dir := o.Out
	if dir == "" {
		dir = filepath.Join("results", results.FileName(s.Name)+"-"+string(scale))
	}
	sig := WatchInterrupts(ctx, io.Err)
	defer sig.Release()
	ctx = sig.Stop
	ses := newSession(chat, tgt, sig)
	ses.warn = io.Err
	ses.progress = o.Progress && !o.Quiet
	if o.MetricsAddr != "" {
		live, err := livemetrics.Start(o.MetricsAddr)
		if err != nil {
			return badInput(err)
		}
		defer live.Close()
		fmt.Fprintf(io.Err, "live metrics: http://%s/metrics\n", live.Addr())
		ses.live = live
	}
	workers := localWorkerPool{}
	defer workers.stop()
	exec := p.executor(ses, workers)
	start := time.Now()
	fmt.Fprintf(chat.Err, "study %s: %d runs at scale %s into %s\n", s.Name, len(runs), scale, dir)
	idx, err := study.Execute(ctx, s, runs, study.Options{Dir: dir, Scale: scale, Exec: exec, Log: chat.Err, Stored: studyRecorder(io.Err, o.History)})
	if rerr := tgt.release(); rerr != nil {
		fmt.Fprintf(io.Err, "warning: %v\n", rerr)
	}
	if idx == nil {
		return failed(err)
	}
	return p.finish(ctx, io, idx, dir, time.Since(start), err)
}

// executor makes each of the study's runs through the session, on the
// setup's workers if it has them, and replaces each run's journal by its
// results once written.
func (p *studyPlan) executor(ses *session, workers localWorkerPool) study.Executor {
	return func(_ context.Context, r study.Run, path string) (*results.Run, error) {
		p.tgt.wantSetup(r.Setup, r.Workload)
		spec := runSpec{name: r.Key, w: r.Workload, dc: r.Driver, journal: results.JournalPath(path), outputs: []output.Output{output.Rates(p.chat.Err)}}
		if n := r.Setup.Workers; n > 0 {
			// The workers get the addresses the session connected to.
			spec.exec = func(ctx context.Context, cfg runner.Config) (*results.Run, error) {
				runOnce, err := workers.runner(n, r.Driver, p.tgt)
				if err != nil {
					return nil, err
				}
				return runOnce(ctx, cfg)
			}
		}
		// The study stores the results, and then removes the journal.
		res, _, err := ses.run(spec)
		return res, err
	}
}

// finish says how the study went (runs by status, verdicts), writes its
// report and returns its outcome as an error of its kind: an interrupted
// study resumes with the same command.
func (p *studyPlan) finish(ctx context.Context, io IO, idx *study.Index, dir string, took time.Duration, err error) error {
	counts := map[string]int{}
	for _, e := range idx.Runs {
		counts[e.Status]++
	}
	fmt.Fprintf(io.Out, "study %s: %d done, %d skipped, %d failed, %d partial of %d runs in %s; results in %s\n",
		p.s.Name, counts[study.Done], counts[study.Skipped], counts[study.Failed], counts[study.Partial], len(p.runs),
		took.Round(time.Second), dir)
	if v := verdictCounts(idx.Runs); v != "" {
		fmt.Fprintf(io.Out, "verdicts: %s\n", v)
	}
	if in, lerr := report.Load([]string{dir}); lerr != nil {
		fmt.Fprintf(io.Err, "no report: %v\n", lerr)
	} else if w, werr := WriteReport(in, filepath.Join(dir, "report.html")); werr != nil {
		fmt.Fprintln(io.Err, werr)
	} else {
		fmt.Fprintf(io.Out, "report: %s\n", w.HTML)
		for _, l := range in.Losses() {
			fmt.Fprintf(io.Out, "ACKNOWLEDGED MESSAGES LOST: %s\n", l)
		}
	}
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return WithKind(Interrupted, fmt.Errorf("%w; run the same command again to resume", err))
	case err != nil:
		return failed(err)
	case counts[study.Failed] > 0 || counts[study.Partial] > 0:
		return failed(fmt.Errorf("%d runs failed and %d are partial; see %s", counts[study.Failed], counts[study.Partial], filepath.Join(dir, "study.json")))
	}
	return nil
}

// WriteReport writes the HTML report of in to out, with its tables and
// charts beside it.
func WriteReport(in *report.Input, out string) (*report.Written, error) {
	w, err := report.Write(in, out, sysinfo.Version)
	if err != nil {
		return nil, failed(fmt.Errorf("write report: %w", err))
	}
	return w, nil
}

// checkStudy validates, before anything runs and without a broker, what
// the study loader cannot: the report columns (report's, or a swept
// parameter's name), and every planned run's
// driver settings (a misspelled or out-of-range swept property).
func checkStudy(s *workload.Study, runs []study.Run, tgt *Target) error {
	var errs []error
	ids := report.ColumnIDs()
	// A swept parameter is a column of its own, by its name.
	swept := s.Sweep
	for _, su := range s.Setups {
		swept = append(swept, su.Sweep...)
	}
	for _, p := range swept {
		if !slices.Contains(ids, p.Name) {
			ids = append(ids, p.Name)
		}
	}
	for _, c := range s.Columns {
		if !slices.Contains(ids, c) {
			errs = append(errs, &workload.FieldError{File: s.Source, Line: s.ColumnsLine, Field: "columns",
				Msg: fmt.Sprintf("unknown column %q%s; columns: %s", c, workload.Suggest(c, ids), strings.Join(ids, ", "))})
		}
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Skip != "" {
			continue
		}
		drv, err := brokers.New(r.Driver, tgt.plannedOptions(r.Driver))
		if err == nil {
			if err = brokers.Check(r.Driver.Name, brokers.Need{Workload: r.Workload, Driver: r.Driver}); err != nil {
				drv.Close()
			}
		}
		if err != nil {
			if msg := err.Error(); !seen[msg] {
				seen[msg] = true
				errs = append(errs, fmt.Errorf("run %s: %w", r.Key, err))
			}
			continue
		}
		drv.Close()
	}
	return errors.Join(errs...)
}

// probeDriver is the driver config used to ask the target how many brokers
// it has: the first setup's or workload's, else Kafka's defaults.
func probeDriver(s *workload.Study) *workload.DriverConfig {
	for _, st := range s.Setups {
		if st.Driver != nil {
			return st.Driver
		}
	}
	for _, w := range s.Workloads {
		if w.Driver != nil {
			return w.Driver
		}
	}
	return &workload.DriverConfig{Name: "kafka", Format: workload.Native, ReplicationFactor: 1}
}

// localWorkerPool holds the local worker processes a study's setups
// spread their runs over, by count, started on first use and kept for
// the study's other runs.
type localWorkerPool map[int]*distributed.LocalWorkers

// runner returns a run function that spreads a run with driver dc over n
// local workers.
func (p localWorkerPool) runner(n int, dc *workload.DriverConfig, tgt *Target) (func(context.Context, runner.Config) (*results.Run, error), error) {
	if tgt.needsCredentials(dc) {
		return nil, errors.New("workers cannot use the credentials of a secured local cluster yet: name the cluster's addresses and credentials in the setup's driver config itself (the credentials as ${file:...} references the workers can read), or use a listener that asks for none")
	}
	src, err := distributed.NewConfigSource(dc, tgt.connected.Endpoints)
	if err != nil {
		return nil, err
	}
	l := p[n]
	if l == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		if l, err = distributed.StartLocal(exe, n, nil); err != nil {
			return nil, err
		}
		p[n] = l
	}
	return func(ctx context.Context, cfg runner.Config) (*results.Run, error) {
		return distributed.Run(ctx, distributed.Config{Run: cfg, Workers: l.URLs, Placement: distributed.Spread, Driver: src})
	}, nil
}

// stop stops every worker process of the pool.
func (p localWorkerPool) stop() {
	for _, l := range p {
		l.Stop()
	}
}

// verdictCounts says how many runs had each verdict, "ok" first, then by
// count: "4 ok, 2 target not held"; "" when no run measured.
func verdictCounts(runs []study.Entry) string {
	counts := map[string]int{}
	for _, e := range runs {
		if e.Verdict != "" {
			counts[e.Verdict]++
		}
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		a, b := kinds[i], kinds[j]
		if (a == "ok") != (b == "ok") {
			return a == "ok"
		}
		if counts[a] != counts[b] {
			return counts[a] > counts[b]
		}
		return a < b
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return strings.Join(parts, ", ")
}
