package cli

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

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/report"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/study"
	"github.com/brokerbench/brokerbench/internal/workload"
)

type studyFlags struct {
	list          bool
	scale         string
	out           string
	broker        string
	brokerMetrics []string
	progress      bool
	quiet         bool
	metricsAddr   string
	local         localFlags
}

func newStudyCmd(io IO) *cobra.Command {
	var f studyFlags
	cmd := &cobra.Command{
		Use:   "study STUDY.yaml",
		Short: "Run every run of a study (workloads x setups x sweep x iterations) into one results directory",
		Long: `study expands a study file into its runs and makes them one after another,
writing each run's results to OUT/runs/KEY.json and the study's index to
OUT/study.json. Run it again with the same --out to resume: finished runs
are kept, partial and missing ones are made. Without --broker the runs go
to local clusters that brokerbench starts at each setup's size (brokers:),
with its links shaped as the setup's network: says; with --broker they run
on the cluster given, and setups that need more brokers, a network or
faults are skipped with the reason.

--scale quick shrinks every run (the study's quick: section, default 1 s
warmup and 5 s measurement) so a whole study takes minutes; --scale full
keeps the published durations. See docs/studies.md.

Exit codes: 0 every run done or skipped, 1 a run failed, 2 invalid study,
4 interrupted (resume with the same command).`,
		Example: `  brokerbench study studies/ibm-event-streams.yaml --scale quick
  brokerbench study studies/aiven-kafka-cpus.yaml --scale full --out results/aiven-full
  brokerbench study my-study.yaml --broker 127.0.0.1:9092 --out results/my-study`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("study takes exactly one study file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := runStudy(cmd.Context(), io, args[0], &f)
			return err
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.list, "list", false, "print the planned runs (and which are skipped, and why) without running them")
	fl.StringVar(&f.scale, "scale", "quick", "quick (minutes) or full (the published durations)")
	fl.StringVarP(&f.out, "out", "o", "", "results directory (default results/<study>-<scale>)")
	fl.StringVar(&f.broker, "broker", "", "broker address(es); default: the local Kafka broker, started if needed")
	fl.StringSliceVar(&f.brokerMetrics, "broker-metrics", nil, "the brokers' metrics endpoints, comma-separated, read at every interval into the results: Prometheus (http://host:port/metrics), NATS monitoring (http://host:8222/varz) or Redis (redis://host:port) (default: the local cluster's own)")
	fl.BoolVar(&f.progress, "progress", false, "print a progress line per interval of every run (as 'run' does by default)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve live figures of the run in progress for Prometheus on http://ADDR/metrics while the study lasts")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines and no line per run: only the study's outcome (as 'run --quiet')")
	f.local.registerTarget(cmd)
	return cmd
}

// runStudy executes the study and returns its directory.
// studyPlan is a study's runs on its target, checked before any of them.
type studyPlan struct {
	s     *workload.Study
	scale study.Scale
	runs  []study.Run
	tgt   *target
	// chat receives what is said along the way; --quiet silences it.
	chat IO
}

// planStudy reads the study, plans its runs on the target and checks them:
// a local cluster that does not fit a setup, and may not be replaced,
// stops the study before its first run.
func planStudy(ctx context.Context, io IO, path string, f *studyFlags) (*studyPlan, error) {
	scale, err := study.ParseScale(f.scale)
	if err != nil {
		return nil, usageError{err}
	}
	s, err := workload.LoadStudy(path)
	if err != nil {
		return nil, err
	}
	if err := f.local.validate(); err != nil {
		return nil, err
	}
	if err := checkMetricsURLs(f.brokerMetrics); err != nil {
		return nil, err
	}
	p := &studyPlan{s: s, scale: scale, chat: io}
	if f.quiet {
		p.chat.Err = goio.Discard
	}
	p.tgt = newTarget(p.chat, f.broker, f.local)
	p.tgt.metricsURLs = f.brokerMetrics
	// A local target builds clusters of any size up to maxLocalBrokers.
	brokers := maxLocalBrokers
	switch {
	case f.broker != "" && f.list:
		// --list never contacts a broker: every setup is listed as if the
		// cluster were large enough.
		brokers = math.MaxInt32
		fmt.Fprintln(io.Err, "note: --list does not contact the cluster; setups are not checked against its size")
	case f.broker != "":
		if brokers, err = p.tgt.brokers(ctx, probeDriver(s)); err != nil {
			return nil, err
		}
	}
	if p.runs, err = study.Plan(s, scale, study.Target{Brokers: brokers, Local: f.broker == ""}); err != nil {
		return nil, err
	}
	if err := checkStudy(s, p.runs, p.tgt); err != nil {
		return nil, err
	}
	if f.broker != "" || f.list {
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

func runStudy(ctx context.Context, io IO, path string, f *studyFlags) (string, error) {
	p, err := planStudy(ctx, io, path, f)
	if err != nil {
		return "", err
	}
	if f.list {
		p.list(io.Out)
		return "", nil
	}
	s, runs, tgt, chat, scale := p.s, p.runs, p.tgt, p.chat, p.scale
	dir := f.out
	if dir == "" {
		dir = filepath.Join("results", results.FileName(s.Name)+"-"+string(scale))
	}
	sig := watchInterrupts(ctx, io.Err)
	defer sig.release()
	ctx = sig.stop
	ses := newSession(chat, tgt, sig)
	ses.progress = f.progress && !f.quiet
	if f.metricsAddr != "" {
		live, err := livemetrics.Start(f.metricsAddr)
		if err != nil {
			return "", withCode(ExitInvalidInput, err)
		}
		defer live.Close()
		fmt.Fprintf(io.Err, "live metrics: http://%s/metrics\n", live.Addr())
		ses.live = live
	}
	workers := localWorkerPool{}
	defer workers.stop()
	exec := p.executor(io, ses, workers)
	start := time.Now()
	fmt.Fprintf(chat.Err, "study %s: %d runs at scale %s into %s\n", s.Name, len(runs), scale, dir)
	idx, err := study.Execute(ctx, s, runs, study.Options{Dir: dir, Scale: scale, Exec: exec, Log: chat.Err})
	if rerr := tgt.release(); rerr != nil {
		fmt.Fprintf(io.Err, "warning: %v\n", rerr)
	}
	if idx == nil {
		return dir, withCode(ExitRunFailed, err)
	}
	return dir, p.finish(ctx, io, idx, dir, time.Since(start), err)
}

// executor makes each of the study's runs through the session, on the
// setup's workers if it has them, and replaces each run's journal by its
// results once written.
func (p *studyPlan) executor(io IO, ses *session, workers localWorkerPool) study.Executor {
	return func(_ context.Context, r study.Run, path string) (*results.Run, error) {
		p.tgt.wantSetup(r.Setup, r.Workload)
		spec := runSpec{name: r.Key, w: r.Workload, dc: r.Driver, journal: results.JournalPath(path)}
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
		res, rec, err := ses.run(spec)
		if rec != nil {
			if ferr := rec.finish(false); ferr != nil {
				fmt.Fprintf(io.Err, "warning: %v\n", ferr)
			}
		}
		if res != nil {
			fmt.Fprintf(p.chat.Err, "    %.0f msg/s published, %.0f consumed; publish p99 %.2f ms, e2e p99 %.2f ms\n",
				res.Measured.PublishRate, res.Measured.ConsumeRate, res.Measured.PublishLatency.P99, res.Measured.EndToEndLatency.P99)
		}
		return res, err
	}
}

// finish says how the study went (runs by status, verdicts), writes its
// report and returns its outcome as an error with its exit code: an
// interrupted study resumes with the same command.
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
	} else if w, werr := writeReport(in, filepath.Join(dir, "report.html")); werr != nil {
		fmt.Fprintln(io.Err, werr)
	} else {
		fmt.Fprintf(io.Out, "report: %s\n", w.HTML)
		for _, l := range in.Losses() {
			fmt.Fprintf(io.Out, "ACKNOWLEDGED MESSAGES LOST: %s\n", l)
		}
	}
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return withCode(ExitInterrupted, fmt.Errorf("%w; run the same command again to resume", err))
	case err != nil:
		return withCode(ExitRunFailed, err)
	case counts[study.Failed] > 0 || counts[study.Partial] > 0:
		return withCode(ExitRunFailed, fmt.Errorf("%d runs failed and %d are partial; see %s", counts[study.Failed], counts[study.Partial], filepath.Join(dir, "study.json")))
	}
	return nil
}

// checkStudy validates, before anything runs and without a broker, what
// the study loader cannot: the report columns, and every planned run's
// driver settings (a misspelled or out-of-range swept property).
func checkStudy(s *workload.Study, runs []study.Run, tgt *target) error {
	var errs []error
	ids := report.ColumnIDs()
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
func (p localWorkerPool) runner(n int, dc *workload.DriverConfig, tgt *target) (func(context.Context, runner.Config) (*results.Run, error), error) {
	if tgt.connected.Credentials != nil && !tgt.plainListener(dc) {
		return nil, errors.New("workers cannot use the credentials of a secured local cluster yet")
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
