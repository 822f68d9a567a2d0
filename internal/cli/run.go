package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/maxrate"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

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

type runFlags struct {
	driverFile    string
	broker        string
	brokerMetrics []string
	duration      time.Duration
	warmup        time.Duration
	rate          float64
	messages      int64
	out           string
	ombJSON       string
	keepTopics    bool
	interval      time.Duration
	drainTimeout  time.Duration
	setupTimeout  time.Duration
	backlogLimit  time.Duration
	maxSendLag    time.Duration
	findMaxRate   bool
	slo           string
	maxSteps      int
	repeats       int
	topics        string
	pprofDir      string
	metricsAddr   string
	perNodeHour   float64
	nodes         int
	noRecording   bool
	quiet         bool
	progress      bool
	local         localFlags
	workers       workerFlags
}

func newRunCmd(io IO) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run WORKLOAD.yaml",
		Short: "Run one workload against a broker and write its results",
		Long: `run executes one workload: it creates the topics, starts the consumers and
waits until they are assigned, starts the producers, warms up, measures,
stops the producers, waits for the consumers to drain, and deletes the
topics. It prints a progress line per interval and a summary, and writes a
results JSON file.

The workload may be in brokerbench's format or an OpenMessaging Benchmark
workload file. The broker settings come from --driver (an OMB driver file or
a brokerbench driver file), from the workload's inline "driver" section, or
default to Kafka. Without a broker address (--broker or bootstrap.servers),
run uses the local Kafka cluster of --local-brokers brokers (default 1) and
starts it if needed, warming a fresh one up for 10 s unmeasured; it keeps
running afterwards (stop it with 'brokerbench local down kafka'). A
workload's fault schedule (kills, pauses of nodes) acts on that local
cluster; the summary says what each fault cost.

Exit codes: 0 ok, 1 run failed, 2 invalid input, 3 target rate not held,
4 interrupted (partial results written), 5 accounting mismatch (messages
lost, or the broker stores a different number than were acknowledged),
6 load-generator-bound (the target was missed because brokerbench itself
could not keep the schedule: see the summary's LOAD-GENERATOR-BOUND line),
7 disturbed (other processes took at least a quarter of the machine's
cores, so the figures describe a shared machine: see the DISTURBED line).
A run whose consumers fell behind through the measurement exits 3 with a
CONSUMER-BOUND line. A fixed-rate run holds its target when it achieves at
least 99% of the rate and its send lag p99 stays within --max-send-lag
(default: 10 ms beyond this machine's scheduling delay p99, which the run
measures).`,
		Example: `  brokerbench run workloads/quick.yaml
  # from an OpenMessaging Benchmark checkout's root, OMB's files unchanged:
  brokerbench run workloads/1-topic-16-partitions-1kb.yaml --driver driver-kafka/kafka-throughput.yaml --duration 30s --warmup 5s
  brokerbench run workloads/quick.yaml --broker 127.0.0.1:9092 --rate 10000 --out results/run.json --omb-json results/omb.json
  brokerbench run workloads/max-rate-100b.yaml --find-max-rate --slo 'p99<50ms,e2e.p99<100ms' --warmup 2s --duration 10s
  brokerbench run workloads/kill-leader.yaml --local-brokers 3
  brokerbench run workloads/consume-only.yaml --topic prefilled --messages 8000000   # consume what an existing topic holds`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("run takes exactly one workload file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorkload(cmd, io, args[0], &f, cmd.Flags().Changed)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.driverFile, "driver", "d", "", "driver config file (OMB or brokerbench format); default: the workload's inline driver, else Kafka")
	fl.StringVar(&f.broker, "broker", "", "broker address(es), comma-separated; overrides the driver config")
	fl.StringSliceVar(&f.brokerMetrics, "broker-metrics", nil, "the brokers' metrics endpoints, comma-separated, read at every interval into the results: Prometheus (http://host:port/metrics), NATS monitoring (http://host:8222/varz) or Redis (redis://host:port) (default: the local cluster's own)")
	fl.DurationVar(&f.duration, "duration", 0, "override the measurement duration (e.g. 30s)")
	fl.DurationVar(&f.warmup, "warmup", 0, "override the warmup duration (e.g. 5s)")
	fl.Float64Var(&f.rate, "rate", 0, "override the total producer rate in msg/s (0 = max rate)")
	fl.Int64Var(&f.messages, "messages", 0, "stop producing after this many messages in total")
	fl.StringVarP(&f.out, "out", "o", "", "results JSON path (default results/<workload>-<run id>.json)")
	fl.StringVar(&f.ombJSON, "omb-json", "", "also write OMB TestResult JSON to this path")
	fl.StringVar(&f.topics, "topic", "", "use these existing topics (comma-separated, one per workload topic) instead of creating new ones; they are not deleted")
	fl.BoolVar(&f.keepTopics, "keep-topics", false, "do not delete the run's topics afterwards")
	fl.DurationVar(&f.interval, "interval", time.Second, "sampling interval")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "how long to wait for consumers to catch up after producing stops")
	fl.DurationVar(&f.setupTimeout, "setup-timeout", 0, "bound on the setup: creating the topics and the clients, and the consumers joining their groups (0: scaled to the workload, 60s + 1s per topic and per consumer group + 250ms per consumer)")
	fl.DurationVar(&f.backlogLimit, "backlog-timeout", 10*time.Minute, "bound on each of a backlog test's build and drain phases")
	fl.DurationVar(&f.maxSendLag, "max-send-lag", 0, "highest send lag p99 with which a fixed-rate run holds its target (0: 10ms beyond the machine's scheduling delay p99, measured in the run; negative: no limit)")
	fl.BoolVar(&f.findMaxRate, "find-max-rate", false, "search for the highest rate the broker sustains (see --slo); each step is a full run of --warmup + --duration")
	fl.StringVar(&f.slo, "slo", "p99<50ms", "latency objectives a sustained rate must meet, e.g. 'p99<50ms,e2e.p99.9<200ms'")
	fl.IntVar(&f.maxSteps, "max-steps", 10, "most fixed-rate steps of --find-max-rate after its unthrottled warm-up and probe")
	fl.IntVar(&f.repeats, "repeats", 1, "times --find-max-rate runs the found rate and the failed rate above it again, to show how repeatable the answer is (0 for none)")
	fl.Float64Var(&f.perNodeHour, "price-per-node-hour", 0, "cost of one broker node per hour: the summary and results then give the cost per billion messages")
	fl.IntVar(&f.nodes, "nodes", 1, "number of broker nodes --price-per-node-hour applies to")
	fl.StringVar(&f.pprofDir, "pprof", "", "write CPU and heap profiles of the load generator (cpu.pprof, heap.pprof) to this directory")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve live figures for Prometheus on http://ADDR/metrics while the run lasts (e.g. 127.0.0.1:9464)")
	fl.BoolVar(&f.noRecording, "no-latency-recording", false, "record no latencies (measures what recording costs; for bench/ only)")
	_ = fl.MarkHidden("no-latency-recording")
	fl.BoolVar(&f.progress, "progress", true, "print a progress line per interval (as 'study --progress')")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines: the same as --progress=false")
	fl.StringSliceVar(&f.workers.urls, "workers", nil, "spread the run over these workers ('brokerbench worker'), comma-separated http://host:port; the results are merged as one run's")
	fl.StringVar(&f.workers.file, "workers-file", "", "read the workers' URLs from this file, one per line")
	fl.IntVar(&f.workers.local, "local-workers", 0, "spread the run over this many worker processes started on this machine, each on its own loopback address")
	fl.DurationVar(&f.workers.wait, "workers-wait", 0, "wait this long for workers that do not answer yet (pods starting); 0 fails at once")
	fl.StringVar(&f.workers.placement, "placement", string(distributed.Spread), "how producers and consumers are spread over workers: spread (in turn by id) or by-topic (each topic's on one worker: end-to-end latency on one clock)")
	f.local.registerTarget(cmd)
	f.local.registerLocalBrokers(cmd)
	return cmd
}

// runInput is what a run's flags and files ask for, checked before any
// broker or worker is reached.
type runInput struct {
	path      string
	w         *workload.Workload
	dc        *workload.DriverConfig
	slo       []maxrate.Objective
	workers   []string
	placement distributed.Placement
	// existing are the --topic names to use instead of new topics.
	existing []string
}

// loadRunInput reads and checks the workload, the driver config and the
// flags that depend on them.
func loadRunInput(cmd *cobra.Command, path string, f *runFlags, changed func(string) bool) (*runInput, error) {
	if err := f.validate(changed); err != nil {
		return nil, err
	}
	in := &runInput{path: path}
	var err error
	if in.w, err = workload.Load(path); err != nil {
		return nil, err
	}
	w := in.w
	if err := applyOverrides(w, cmd, changed); err != nil {
		return nil, err
	}
	if f.findMaxRate {
		if w.MessageLimit > 0 || w.Producers() == 0 || w.RateProfile != nil {
			return nil, usageError{errors.New("--find-max-rate needs a workload with producers, no message limit and no rateProfile")}
		}
		if in.slo, err = maxrate.ParseSLO(f.slo); err != nil {
			return nil, usageError{fmt.Errorf("--slo: %w", err)}
		}
	} else if changed("slo") || changed("max-steps") {
		return nil, usageError{errors.New("--slo and --max-steps apply only with --find-max-rate")}
	}
	if in.workers, in.placement, err = f.workers.list(); err != nil {
		return nil, err
	}
	if changed("placement") && !f.workers.distributed() {
		return nil, usageError{errors.New("--placement applies only with --workers, --workers-file or --local-workers")}
	}
	if f.workers.distributed() {
		if err := distributed.CheckWorkload(w); err != nil {
			return nil, usageError{fmt.Errorf("%s: %w", path, err)}
		}
		// The split is checked before any broker or worker is touched.
		if err := distributed.CheckSpread(w, len(in.workers)+f.workers.local, in.placement); err != nil {
			return nil, usageError{err}
		}
	}
	in.existing = splitList(f.topics)
	if n := len(in.existing); n > 0 && n != w.Topics {
		return nil, usageError{fmt.Errorf("--topic names %d topics but the workload has %d", n, w.Topics)}
	}
	in.dc = w.Driver
	if f.driverFile != "" {
		if in.dc, err = workload.LoadDriver(f.driverFile); err != nil {
			return nil, err
		}
	}
	if in.dc == nil {
		in.dc = defaultDriver()
	}
	reg, known := driver.Lookup(in.dc.Name)
	if !known {
		return nil, withCode(ExitInvalidInput, fmt.Errorf("%w %q (from %s): available drivers: %s", driver.ErrUnknownDriver, in.dc.Name, in.dc.Source, strings.Join(driver.Names(), ", ")))
	}
	if err := reg.Capabilities.CheckWorkload(w, in.dc.Name); err != nil {
		return nil, err
	}
	if err := checkOutputs(in.out("probe", f), f.ombJSON); err != nil {
		return nil, err
	}
	return in, checkMetricsURLs(f.brokerMetrics)
}

// out is the results file: --out, or one named after the workload and
// the run's id (known only once the run starts; its folder is checked
// before with a stand-in id).
func (in *runInput) out(id string, f *runFlags) string {
	if f.out != "" {
		return f.out
	}
	return filepath.Join("results", fmt.Sprintf("%s-%s.json", results.FileName(in.w.Name), id))
}

func runWorkload(cmd *cobra.Command, io IO, path string, f *runFlags, changed func(string) bool) error {
	in, err := loadRunInput(cmd, path, f, changed)
	if err != nil {
		return err
	}
	w, dc := in.w, in.dc
	for _, n := range w.Notes {
		fmt.Fprintf(io.Err, "note: %s\n", n)
	}
	sig := watchInterrupts(cmd.Context(), io.Err)
	defer sig.release()
	tgt := newTarget(io, f.broker, f.local)
	tgt.metricsURLs = f.brokerMetrics
	tgt.wantCluster(f.local.brokers, nil, w)
	tgt.local.links = tgt.local.links || f.local.links
	if len(w.Faults) > 0 && !tgt.usesLocal(dc) {
		return usageError{fmt.Errorf("%s: the workload has a fault schedule; %s", w.Source, faultsNeedLocal(dc.Name))}
	}
	ses := newSession(io, tgt, sig)
	closeOutputs, err := f.startOutputs(io, ses)
	if err != nil {
		return err
	}
	defer closeOutputs()
	exec, stopWorkers, err := in.executor(io, f, tgt)
	if err != nil {
		return err
	}
	defer stopWorkers()
	id := runner.NewID()
	out := in.out(id, f)
	journal := results.JournalPath(out)
	if f.findMaxRate {
		journal = "" // many runs: the registry keeps their topics, no journal
	}
	res, rec, runErr := ses.run(runSpec{
		name: w.Name, w: w, dc: dc, id: id, journal: journal, keepTopics: f.keepTopics || len(in.existing) > 0, exec: exec,
		config: runner.Config{
			Interval: f.interval, DrainTimeout: f.drainTimeout, SetupTimeout: f.setupTimeout, BacklogTimeout: f.backlogLimit,
			KeepTopics: f.keepTopics, Log: io.Err, MaxSendLag: f.maxSendLag, NoLatencyRecording: f.noRecording, ExistingTopics: in.existing,
		},
	})
	if res == nil {
		var coded *exitError
		switch {
		case errors.As(runErr, &coded), errors.As(runErr, new(usageError)):
			return runErr
		case errors.Is(runErr, workload.ErrInvalid):
			return withCode(ExitInvalidInput, runErr)
		}
		return withCode(ExitRunFailed, setupAdvice(runErr))
	}
	if f.perNodeHour > 0 {
		res.Price = &results.Price{PerNodeHour: f.perNodeHour, Nodes: f.nodes, Currency: "USD"}
	}
	return finishRun(io, res, runErr, out, f.ombJSON, rec)
}

// faultsNeedLocal says why a fault schedule cannot run on the driver's
// target, and what to do.
func faultsNeedLocal(driverName string) string {
	reg, _ := driver.Lookup(driverName)
	switch {
	case reg.InProcess:
		return fmt.Sprintf("faults act on the local clusters brokerbench starts, and the %s driver's broker is in brokerbench's own process: use a driver with a local cluster", driverName)
	case reg.EndpointSetting != "":
		return fmt.Sprintf("faults act on the local clusters brokerbench starts: leave out --broker (and %s in the driver config), and use --local-brokers", reg.EndpointSetting)
	}
	return "faults act on the local clusters brokerbench starts: leave out --broker, and use --local-brokers"
}

// startOutputs starts what the flags ask to see of the run besides its
// files: progress lines, live metrics, profiles. The returned function
// stops them.
func (f *runFlags) startOutputs(io IO, ses *session) (func(), error) {
	ses.progress = f.progress && !f.quiet
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if f.metricsAddr != "" {
		live, err := livemetrics.Start(f.metricsAddr)
		if err != nil {
			return nil, withCode(ExitInvalidInput, err)
		}
		closers = append(closers, func() { live.Close() })
		fmt.Fprintf(io.Err, "live metrics: http://%s/metrics\n", live.Addr())
		ses.live = live
	}
	if f.pprofDir != "" {
		stopProfile, err := startProfiles(f.pprofDir)
		if err != nil {
			closeAll()
			return nil, withCode(ExitRunFailed, err)
		}
		closers = append(closers, func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintln(io.Err, "profiles:", err)
			} else {
				fmt.Fprintf(io.Err, "profiles: %s\n", filepath.Join(f.pprofDir, "{cpu,heap}.pprof"))
			}
		})
	}
	return closeAll, nil
}

// executor returns how the run is made once the session connected: in
// this process or spread over workers (started here for --local-workers;
// the returned function stops them), once or as a max-rate search.
func (in *runInput) executor(io IO, f *runFlags, tgt *target) (exec func(context.Context, runner.Config) (*results.Run, error), stop func(), err error) {
	stop = func() {}
	runOnce := runner.Run
	if f.workers.distributed() {
		local, stopLocal, err := f.workers.startLocal()
		if err != nil {
			return nil, nil, err
		}
		stop = stopLocal
		workers := append(in.workers, local...)
		runOnce = func(ctx context.Context, cfg runner.Config) (*results.Run, error) {
			// The driver travels as text, with the addresses and
			// credentials of the broker the session connected to.
			src, err := driverSource(in.dc, f.driverFile, in.path, in.w, tgt.connected, tgt.connected.Credentials != nil && !tgt.plainListener(in.dc))
			if err != nil {
				return nil, err
			}
			return distributed.Run(ctx, distributed.Config{Run: cfg, Workers: workers, Placement: in.placement, Driver: src, WaitForWorkers: f.workers.wait})
		}
	}
	if !f.findMaxRate {
		return runOnce, stop, nil
	}
	return func(ctx context.Context, cfg runner.Config) (*results.Run, error) {
		return searchMaxRate(ctx, io, cfg, runOnce, in.slo, f.maxSteps, f.repeats)
	}, stop, nil
}

// setupAdvice adds to the error of a setup that outlasted its bound how to
// give it longer; other errors it returns as they are.
func setupAdvice(err error) error {
	if !errors.Is(err, runner.ErrSetupTimeout) {
		return err
	}
	return fmt.Errorf("%w\n(the setup's bound grows with the workload's topics, consumer groups and consumers; give it longer with --setup-timeout)", err)
}

// finishRun prints the summary of res, writes its files (to a fallback path
// if need be, never losing them) and returns the run's verdict as an error
// with its exit code.
func finishRun(io IO, res *results.Run, runErr error, out, ombOut string, rec *runRecord) error {
	results.PrintSummary(io.Out, res)
	partial := ""
	if res.Partial {
		partial = " (PARTIAL)"
	}
	var writeErrs []error
	if written, err := results.WriteOrFallback(out, res); err != nil {
		writeErrs = append(writeErrs, err)
		if written != "" {
			fmt.Fprintf(io.Out, "results: could not write %s (%v); saved to %s%s instead\n", out, err, written, partial)
		}
	} else {
		fmt.Fprintf(io.Out, "results: %s%s\n", written, partial)
	}
	if ombOut != "" {
		if written, err := results.WriteOrFallback(ombOut, results.OMB(res)); err != nil {
			writeErrs = append(writeErrs, err)
			if written != "" {
				fmt.Fprintf(io.Out, "OMB results: could not write %s (%v); saved to %s instead\n", ombOut, err, written)
			}
		} else {
			fmt.Fprintf(io.Out, "OMB results: %s\n", written)
		}
	}
	if rec != nil {
		if err := rec.finish(len(writeErrs) == 0); err != nil {
			fmt.Fprintf(io.Err, "warning: %v\n", err)
		}
	}
	v := results.Judge(res)
	switch {
	case v.Kind == results.Interrupted:
		return withCode(ExitInterrupted, errors.New(v.Reason))
	case runErr != nil:
		return withCode(ExitRunFailed, runErr)
	case v.Kind != results.OK:
		return withCode(verdictCodes[v.Kind], errors.New(v.Reason))
	case len(writeErrs) > 0:
		return withCode(ExitRunFailed, errors.Join(writeErrs...))
	}
	return nil
}

// verdictCodes maps a run's verdict to the process exit code.
var verdictCodes = map[results.VerdictKind]int{
	results.OK: ExitOK, results.Failed: ExitRunFailed, results.TargetNotHeld: ExitTargetNotHeld,
	results.Interrupted: ExitInterrupted, results.AccountingMismatch: ExitAccountingFail,
	results.LoadGeneratorBound: ExitLoadGeneratorBound, results.Disturbed: ExitDisturbed,
	results.ConsumerBound: ExitTargetNotHeld,
}

// applyOverrides sets the workload fields given on the command line, each
// through the validator its workload-file field uses, then checks the
// rules between fields again.
func applyOverrides(w *workload.Workload, cmd *cobra.Command, changed func(string) bool) error {
	for _, o := range []struct{ flag, field string }{
		{"duration", "duration"}, {"warmup", "warmup"}, {"rate", "rate"}, {"messages", "messages"},
	} {
		if !changed(o.flag) {
			continue
		}
		if err := w.SetField("--"+o.flag, 0, o.field, cmd.Flags().Lookup(o.flag).Value.String()); err != nil {
			return err
		}
	}
	if err := w.Validate(); err != nil {
		return fmt.Errorf("after command-line overrides: %w", err)
	}
	return nil
}

// validate checks the flags that are not workload fields.
func (f *runFlags) validate(changed func(string) bool) error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, usageError{fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...))})
	}
	if f.interval < 10*time.Millisecond {
		bad("interval", "must be at least 10ms, got %s", f.interval)
	}
	if f.drainTimeout <= 0 {
		bad("drain-timeout", "must be positive, got %s", f.drainTimeout)
	}
	if f.setupTimeout < 0 {
		bad("setup-timeout", "must not be negative (0: scaled to the workload), got %s", f.setupTimeout)
	}
	if f.backlogLimit <= 0 {
		bad("backlog-timeout", "must be positive, got %s", f.backlogLimit)
	}
	if f.maxSteps < 1 {
		bad("max-steps", "must be at least 1, got %d", f.maxSteps)
	}
	if f.repeats < 0 {
		bad("repeats", "must be 0 or more, got %d", f.repeats)
	}
	if f.perNodeHour < 0 {
		bad("price-per-node-hour", "must not be negative, got %v", f.perNodeHour)
	}
	if f.nodes < 1 {
		bad("nodes", "must be at least 1, got %d", f.nodes)
	}
	if changed("nodes") && !changed("price-per-node-hour") {
		bad("nodes", "applies only with --price-per-node-hour")
	}
	if err := f.local.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkOutputs makes sure the results can be written before the run starts.
func checkOutputs(paths ...string) error {
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, _ := filepath.Abs(p)
		if seen[abs] {
			return usageError{fmt.Errorf("--out and --omb-json name the same file %s: give each its own", p)}
		}
		seen[abs] = true
		if err := results.CheckWritable(p); err != nil {
			return usageError{fmt.Errorf("results cannot be written: %w; choose another path", err)}
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// searchMaxRate runs a max sustainable rate search with cfg as the template
// of every step, each made by runOnce. It returns the run at the highest held rate with the
// search attached, or the last step's run if none held.
func searchMaxRate(ctx context.Context, io IO, cfg runner.Config, runOnce func(context.Context, runner.Config) (*results.Run, error), slo []maxrate.Objective, maxSteps, repeats int) (*results.Run, error) {
	var last *results.Run
	trial := func(ctx context.Context, rate float64) (*results.Run, error) {
		w := *cfg.Workload
		w.ProducerRate = rate
		step := cfg
		step.Workload = &w
		step.Progress, step.Log = nil, nil
		if rate == 0 {
			fmt.Fprintf(io.Err, "max-rate search: unthrottled probe (%s warmup, %s)\n", w.Warmup, w.Duration)
		} else {
			fmt.Fprintf(io.Err, "max-rate search: trying %.0f msg/s\n", rate)
		}
		res, err := runOnce(ctx, step)
		if res != nil {
			last = res
		}
		return res, err
	}
	out, err := maxrate.Search(ctx, maxrate.Config{
		Trial: trial, SLO: slo, MaxSteps: maxSteps, Repeats: repeats,
		Progress: func(s results.RateStep) { fmt.Fprintln(io.Err, results.RateStepLine(s)) },
		Sample:   cfg.SampleSystem,
		Log:      func(format string, args ...any) { fmt.Fprintf(io.Err, format+"\n", args...) },
	})
	res := out.Best
	if res == nil {
		res = last
	}
	if res == nil {
		return nil, err
	}
	res.MaxRate = &out.Search
	if err != nil && ctx.Err() != nil {
		res.Partial, res.PartialReason = true, "max-rate search interrupted: "+context.Cause(ctx).Error()
		return res, err
	}
	return res, err
}

// startProfiles starts a CPU profile in dir; the returned function stops it
// and writes a heap profile beside it.
func startProfiles(dir string) (stop func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		_ = cpu.Close()
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			return err
		}
		heap, err := os.Create(filepath.Join(dir, "heap.pprof"))
		if err != nil {
			return err
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(heap); err != nil {
			_ = heap.Close()
			return err
		}
		return heap.Close()
	}, nil
}
