package engine

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

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/maxrate"
	"github.com/brokerbench/brokerbench/internal/output"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// RunOptions are what one run is asked to do besides its workload file.
// DefaultRunOptions holds every default.
type RunOptions struct {
	// DriverFile is the driver config file; "": the workload's inline
	// driver, else Kafka.
	DriverFile string
	// Broker lists broker addresses, comma-separated; "": the driver
	// config's, else the local cluster.
	Broker string
	// BrokerMetrics are the brokers' metrics endpoints; none: the local
	// cluster's own.
	BrokerMetrics []string
	// Overrides set workload fields.
	Overrides []Override
	// Out is the results JSON path ("": results/<workload>-<run id>.json);
	// OMBJSON, if set, is where OMB TestResult JSON goes too.
	Out, OMBJSON string
	// Topics names existing topics to use, comma-separated.
	Topics     string
	KeepTopics bool
	// Interval is the sampling interval.
	Interval time.Duration
	// DrainTimeout, SetupTimeout (0: scaled to the workload),
	// BacklogTimeout and MaxSendLag are runner.Config's.
	DrainTimeout, SetupTimeout, BacklogTimeout, MaxSendLag time.Duration
	// FindMaxRate searches for the highest rate meeting SLO, in at most
	// MaxSteps fixed-rate steps, repeating the answer Repeats times.
	FindMaxRate bool
	SLO         string
	MaxSteps    int
	Repeats     int
	// Ramp, if positive, makes the search find the knee with one run
	// whose rate ramps up over the warmup and Ramp, then confirm it with
	// constant runs, instead of doubling steps.
	Ramp time.Duration
	// PerNodeHour, if positive, prices Nodes broker nodes.
	PerNodeHour float64
	Nodes       int
	// PprofDir, if set, receives the load generator's profiles.
	PprofDir string
	// MetricsAddr, if set, serves live metrics.
	MetricsAddr string
	// NoLatencyRecording records no latencies.
	NoLatencyRecording bool
	// Progress prints a line per interval.
	Progress bool
	Local    LocalOptions
	Workers  WorkerOptions
	// History is where the run is recorded once its results are written.
	History history.Recording
	// Given reports whether the user set the option of this name (its
	// flag's); nil: none was set.
	Given func(name string) bool
}

// DefaultRunOptions are the options of a run the user says nothing
// about.
func DefaultRunOptions() RunOptions {
	return RunOptions{
		Interval: time.Second, DrainTimeout: 30 * time.Second, BacklogTimeout: 10 * time.Minute,
		SLO: "p99<50ms", MaxSteps: 10, Repeats: 1, Nodes: 1, Progress: true,
		Local:   localTarget(0),
		Workers: WorkerOptions{Placement: string(distributed.Spread)},
	}
}

func (o *RunOptions) given(name string) bool { return o.Given != nil && o.Given(name) }

// Override sets a workload field from the command line: Name is both the
// field's and the option's (duration, warmup, rate, messages).
type Override struct {
	Name, Value string
}

// applyOverrides sets the workload fields given on the command line, each
// through the validator its workload-file field uses, then checks the
// rules between fields again.
func applyOverrides(w *workload.Workload, overrides []Override) error {
	for _, o := range overrides {
		if err := w.SetField("--"+o.Name, 0, o.Name, o.Value); err != nil {
			return err
		}
	}
	if err := w.Validate(); err != nil {
		return fmt.Errorf("after command-line overrides: %w", err)
	}
	return nil
}

// runInput is what a run's options and files ask for, checked before any
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
// options that depend on them.
func loadRunInput(path string, o *RunOptions) (*runInput, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	w, err := workload.Load(path)
	if err != nil {
		return nil, err
	}
	dc, err := driverConfig(w, o.DriverFile)
	if err != nil {
		return nil, err
	}
	return checkRunInput(&runInput{path: path, w: w, dc: dc}, o)
}

// checkRunInput checks in's workload and driver config (read from a file,
// or already in memory) and the options that depend on them, and fills
// in what they ask for.
func checkRunInput(in *runInput, o *RunOptions) (*runInput, error) {
	w, path := in.w, in.path
	var err error
	if err := applyOverrides(w, o.Overrides); err != nil {
		return nil, err
	}
	if o.FindMaxRate {
		if w.MessageLimit > 0 || w.Producers() == 0 || w.RateProfile != nil {
			return nil, badInput(errors.New("--find-max-rate needs a workload with producers, no message limit and no rateProfile"))
		}
		if in.slo, err = maxrate.ParseSLO(o.SLO); err != nil {
			return nil, badInputf("--slo: %w", err)
		}
	} else if o.given("slo") || o.given("max-steps") || o.given("ramp") {
		return nil, badInput(errors.New("--slo, --max-steps and --ramp apply only with --find-max-rate"))
	}
	if in.workers, in.placement, err = o.Workers.list(); err != nil {
		return nil, err
	}
	if o.given("placement") && !o.Workers.distributed() {
		return nil, badInput(errors.New("--placement applies only with --workers, --workers-file or --local-workers"))
	}
	if o.Workers.distributed() {
		if err := distributed.CheckWorkload(w); err != nil {
			return nil, badInputf("%s: %w", path, err)
		}
		// The split is checked before any broker or worker is touched.
		if err := distributed.CheckSpread(w, len(in.workers)+o.Workers.Local, in.placement); err != nil {
			return nil, badInput(err)
		}
	}
	in.existing = splitList(o.Topics)
	if n := len(in.existing); n > 0 && n != w.Topics {
		return nil, badInputf("--topic names %d topics but the workload has %d", n, w.Topics)
	}
	if _, known := brokers.Lookup(in.dc.Name); !known {
		return nil, &Error{Kind: BadInput, Err: brokers.UnknownDriver(in.dc)}
	}
	if err := brokers.Check(in.dc.Name, brokers.Need{Workload: w, Driver: in.dc, Existing: len(in.existing) > 0}); err != nil {
		return nil, err
	}
	if err := checkOutputs(in.out("probe", o), o.OMBJSON); err != nil {
		return nil, err
	}
	return in, checkMetricsURLs(o.BrokerMetrics)
}

// driverConfig is the driver config of runs of w: driverFile's, else w's
// inline one, else DefaultDriver.
func driverConfig(w *workload.Workload, driverFile string) (*workload.DriverConfig, error) {
	dc := w.Driver
	if driverFile != "" {
		var err error
		if dc, err = workload.LoadDriver(driverFile); err != nil {
			return nil, err
		}
	}
	if dc == nil {
		dc = DefaultDriver()
	}
	return dc, nil
}

// out is the results file: --out, or one named after the workload and
// the run's id (known only once the run starts; its folder is checked
// before with a stand-in id).
func (in *runInput) out(id string, o *RunOptions) string {
	if o.Out != "" {
		return o.Out
	}
	return filepath.Join("results", fmt.Sprintf("%s-%s.json", results.FileName(in.w.Name), id))
}

// Run makes one run of the workload in the file at path: it checks the
// options and files, makes the run on its target (watching for
// interrupts), prints its summary, writes its files and returns its
// verdict as an error of its Kind (nil: the run held its target).
func Run(ctx context.Context, io IO, path string, o RunOptions) error {
	in, err := loadRunInput(path, &o)
	if err != nil {
		return err
	}
	_, err = run(ctx, io, in, o)
	return err
}

// RunLoaded makes one run of w with the driver config dc, both already
// in memory, as Run does of a workload file (o.DriverFile is not read):
// it returns the run's results, when it measured any, beside its
// verdict. w.Source names the workload in messages.
func RunLoaded(ctx context.Context, io IO, w *workload.Workload, dc *workload.DriverConfig, o RunOptions) (*results.Run, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	in, err := checkRunInput(&runInput{path: w.Source, w: w, dc: dc}, &o)
	if err != nil {
		return nil, err
	}
	return run(ctx, io, in, o)
}

// run is the run sequence of Run and RunLoaded: it makes the run in asks
// for on its target (watching for interrupts), prints its summary,
// writes its files, records it, and returns its results (nil if it
// measured nothing) and its verdict as an error of its Kind.
func run(ctx context.Context, io IO, in *runInput, o RunOptions) (*results.Run, error) {
	w, dc := in.w, in.dc
	for _, n := range w.Notes {
		fmt.Fprintf(io.Err, "note: %s\n", n)
	}
	sig := WatchInterrupts(ctx, io.Err)
	defer sig.Release()
	tgt := newTarget(io, o.Broker, o.Local)
	tgt.metricsURLs = o.BrokerMetrics
	tgt.wantCluster(o.Local.Brokers, nil, w)
	tgt.local.Links = tgt.local.Links || o.Local.Links
	if len(w.Faults) > 0 && !tgt.usesLocal(dc) && !makesOwnFaults(dc.Name) {
		return nil, badInputf("%s: the workload has a fault schedule; %s", w.Source, faultsNeedLocal(dc.Name))
	}
	ses := newSession(io, tgt, sig)
	closeOutputs, err := o.startOutputs(io, ses)
	if err != nil {
		return nil, err
	}
	defer closeOutputs()
	exec, stopWorkers, err := in.executor(io, &o, tgt)
	if err != nil {
		return nil, err
	}
	defer stopWorkers()
	id := runner.NewID()
	out := in.out(id, &o)
	journal := results.JournalPath(out)
	if o.FindMaxRate {
		journal = "" // many runs: the registry keeps their topics, no journal
	}
	var price *results.Price
	if o.PerNodeHour > 0 {
		price = &results.Price{PerNodeHour: o.PerNodeHour, Nodes: o.Nodes, Currency: "USD"}
	}
	res, storeErr, runErr := ses.run(runSpec{
		name: w.Name, w: w, dc: dc, id: id, journal: journal, keepTopics: o.KeepTopics || len(in.existing) > 0, exec: exec,
		config: runner.Config{
			Interval: o.Interval, DrainTimeout: o.DrainTimeout, SetupTimeout: o.SetupTimeout, BacklogTimeout: o.BacklogTimeout,
			KeepTopics: o.KeepTopics, Log: io.Err, MaxSendLag: o.MaxSendLag, NoLatencyRecording: o.NoLatencyRecording, ExistingTopics: in.existing,
		},
		outputs: runOutputs(io, out, o.OMBJSON), price: price,
	})
	if res == nil {
		if IsKinded(runErr) {
			return nil, runErr
		}
		return nil, WithKind(KindOf(runErr), setupAdvice(runErr))
	}
	if storeErr == nil {
		recordHistory(io.Err, o.History, history.Stored{Run: res, Path: out})
	}
	return res, verdict(res, runErr, storeErr)
}

// runOutputs are a run's own outputs: its summary, its results file at
// out and, if ombOut is set, its OMB results there.
func runOutputs(io IO, out, ombOut string) []output.Output {
	outs := []output.Output{output.Summary(io.Out), output.ResultsFile(io.Out, out)}
	if ombOut != "" {
		outs = append(outs, output.OMBFile(io.Out, ombOut))
	}
	return outs
}

// makesOwnFaults reports whether the driver's broker takes faults
// without a local cluster (its module makes them: the memory broker).
func makesOwnFaults(driverName string) bool {
	reg, _ := brokers.Lookup(driverName)
	return reg.Faults != nil
}

// faultsNeedLocal says why a fault schedule cannot run on the driver's
// target, and what to do.
func faultsNeedLocal(driverName string) string {
	reg, _ := brokers.Lookup(driverName)
	if len(reg.EndpointSettings) > 0 {
		return fmt.Sprintf("faults act on the local clusters brokerbench starts: leave out --broker, and give --local-brokers N (the local cluster's addresses then replace %s in the driver config)", strings.Join(reg.EndpointSettings, ", "))
	}
	return "faults act on the local clusters brokerbench starts: leave out --broker, and give --local-brokers N"
}

// startOutputs starts what the options ask to see of the run besides its
// files: progress lines, live metrics, profiles. The returned function
// stops them.
func (o *RunOptions) startOutputs(io IO, ses *session) (func(), error) {
	ses.progress = o.Progress
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if o.MetricsAddr != "" {
		live, err := livemetrics.Start(o.MetricsAddr)
		if err != nil {
			return nil, badInput(err)
		}
		closers = append(closers, func() { live.Close() })
		fmt.Fprintf(io.Err, "live metrics: http://%s/metrics\n", live.Addr())
		ses.live = live
	}
	if o.PprofDir != "" {
		stopProfile, err := startProfiles(o.PprofDir)
		if err != nil {
			closeAll()
			return nil, failed(err)
		}
		closers = append(closers, func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintln(io.Err, "profiles:", err)
			} else {
				fmt.Fprintf(io.Err, "profiles: %s\n", filepath.Join(o.PprofDir, "{cpu,heap}.pprof"))
			}
		})
	}
	return closeAll, nil
}

// executor returns how the run is made once the session connected: in
// this process or spread over workers (started here for --local-workers;
// the returned function stops them), once or as a max-rate search.
func (in *runInput) executor(io IO, o *RunOptions, tgt *Target) (exec func(context.Context, runner.Config) (*results.Run, error), stop func(), err error) {
	stop = func() {}
	runOnce := runner.Run
	if o.Workers.distributed() {
		local, stopLocal, err := o.Workers.startLocal()
		if err != nil {
			return nil, nil, err
		}
		stop = stopLocal
		workers := append(in.workers, local...)
		runOnce = func(ctx context.Context, cfg runner.Config) (*results.Run, error) {
			// The driver travels as text, with the addresses and
			// credentials of the broker the session connected to.
			src, err := driverSource(in.dc, o.DriverFile, in.path, in.w, tgt.connected, tgt.needsCredentials(in.dc))
			if err != nil {
				return nil, err
			}
			return distributed.Run(ctx, distributed.Config{Run: cfg, Workers: workers, Placement: in.placement, Driver: src, WaitForWorkers: o.Workers.Wait})
		}
	}
	if !o.FindMaxRate {
		return runOnce, stop, nil
	}
	return func(ctx context.Context, cfg runner.Config) (*results.Run, error) {
		return searchMaxRate(ctx, io, cfg, runOnce, in.slo, o)
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

// verdict is the outcome of a run that measured res as an error of its
// kind: interrupted first, then the run's own error, then its verdict,
// then the results that could not be stored.
func verdict(res *results.Run, runErr, writeErr error) error {
	v := results.Judge(res)
	switch {
	case v.Kind == results.Interrupted:
		return WithKind(Interrupted, errors.New(v.Reason))
	case runErr != nil:
		return failed(runErr)
	case v.Kind != results.OK:
		return WithKind(verdictKinds[v.Kind], errors.New(v.Reason))
	}
	return failed(writeErr)
}

// validate checks the options that are not workload fields.
func (o *RunOptions) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, badInputf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if o.Interval < 10*time.Millisecond {
		bad("interval", "must be at least 10ms, got %s", o.Interval)
	}
	if o.DrainTimeout <= 0 {
		bad("drain-timeout", "must be positive, got %s", o.DrainTimeout)
	}
	if o.SetupTimeout < 0 {
		bad("setup-timeout", "must not be negative (0: scaled to the workload), got %s", o.SetupTimeout)
	}
	if o.BacklogTimeout <= 0 {
		bad("backlog-timeout", "must be positive, got %s", o.BacklogTimeout)
	}
	if o.MaxSteps < 1 {
		bad("max-steps", "must be at least 1, got %d", o.MaxSteps)
	}
	if o.Ramp < 0 {
		bad("ramp", "must be 0 (a step search) or a positive duration, got %s", o.Ramp)
	}
	if o.Repeats < 0 {
		bad("repeats", "must be 0 or more, got %d", o.Repeats)
	}
	if o.PerNodeHour < 0 {
		bad("price-per-node-hour", "must not be negative, got %v", o.PerNodeHour)
	}
	if o.Nodes < 1 {
		bad("nodes", "must be at least 1, got %d", o.Nodes)
	}
	if o.given("nodes") && !o.given("price-per-node-hour") {
		bad("nodes", "applies only with --price-per-node-hour")
	}
	if err := o.Local.Validate(); err != nil {
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
			return badInputf("--out and --omb-json name the same file %s: give each its own", p)
		}
		seen[abs] = true
		if err := results.CheckWritable(p); err != nil {
			return badInputf("results cannot be written: %w; choose another path", err)
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
// of every step, each made by runOnce, as o's search options say. It returns the run at the highest held rate with the
// search attached, or the last step's run if none held.
func searchMaxRate(ctx context.Context, io IO, cfg runner.Config, runOnce func(context.Context, runner.Config) (*results.Run, error), slo []maxrate.Objective, o *RunOptions) (*results.Run, error) {
	var last *results.Run
	run := func(ctx context.Context, w workload.Workload) (*results.Run, error) {
		step := cfg
		step.Workload = &w
		step.Log = nil
		if cfg.Journal != nil {
			step.Journal = topicsOnly{cfg.Journal}
		}
		res, err := runOnce(ctx, step)
		if res != nil {
			last = res
		}
		return res, err
	}
	trial := func(ctx context.Context, rate float64) (*results.Run, error) {
		w := *cfg.Workload
		w.ProducerRate = rate
		if rate == 0 {
			fmt.Fprintf(io.Err, "max-rate search: unthrottled probe (%s warmup, %s)\n", w.Warmup, w.Duration)
		} else {
			fmt.Fprintf(io.Err, "max-rate search: trying %.0f msg/s\n", rate)
		}
		return run(ctx, w)
	}
	var ramp maxrate.RampTrial
	if o.Ramp > 0 {
		ramp = func(ctx context.Context, from, to float64) (*results.Run, error) {
			w := *cfg.Workload
			w.ProducerRate, w.Duration = 0, o.Ramp
			w.RateProfile = &workload.RateProfile{Ramp: &workload.Ramp{From: from, To: to, Over: w.Warmup + w.Duration}}
			fmt.Fprintf(io.Err, "max-rate search: ramping from %.0f to %.0f msg/s over %s\n", from, to, w.Warmup+w.Duration)
			return run(ctx, w)
		}
	}
	out, err := maxrate.Search(ctx, maxrate.Config{
		Trial: trial, Ramp: ramp, SLO: slo, MaxSteps: o.MaxSteps, Repeats: o.Repeats,
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

// topicsOnly passes a journal the topics of a max-rate search's steps,
// not their intervals: the steps show no progress lines or live metrics.
type topicsOnly struct{ runner.Journal }

// Interval drops the interval.
func (topicsOnly) Interval(results.Interval, results.Histograms) {}
