package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/report"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
)

// historyFlags are the flags of the commands whose runs are recorded in
// the history.
type historyFlags struct {
	path   string
	off    bool
	labels []string
}

func addHistoryFlags(fl *pflag.FlagSet, h *historyFlags) {
	fl.StringVar(&h.path, "history", "", "record the runs in this history store (default $BROKERBENCH_HISTORY, else $XDG_DATA_HOME/brokerbench/history.jsonl, else ~/.local/share/brokerbench/history.jsonl; see docs/history.md)")
	fl.BoolVar(&h.off, "no-history", false, "do not record the runs in the history")
	fl.StringArrayVar(&h.labels, "label", nil, "label the runs' history records, key=value (repeatable), e.g. --label ci=nightly --label pr=123")
}

// recording is where the flags say the runs are recorded.
func (h *historyFlags) recording() (history.Recording, error) {
	labels, err := history.Labels(h.labels)
	if err != nil {
		return history.Recording{}, usageError{err}
	}
	rc := history.Recording{Path: h.path, Labels: labels}
	switch {
	case h.off:
		rc.Path = ""
	case rc.Path == "":
		rc.Path = history.DefaultPath()
	}
	return rc, nil
}

func newHistoryCmd(io IO) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "history",
		Short: "The runs brokerbench remembers: list, show, trend, compare, import, check for regressions, and report",
		Long: `Every run and every run of a study is recorded in the history once its
results file is written: its id, time, labels, what it benchmarked (the
workload's settings hashed, the driver's settings), what it ran on (broker
version, nodes, brokerbench version, machine), its summary figures and the
path of its results file. The history is one file of JSON lines, by default
$BROKERBENCH_HISTORY, else $XDG_DATA_HOME/brokerbench/history.jsonl, else
~/.local/share/brokerbench/history.jsonl. Runs of the same benchmark on the
same number of nodes form a series; 'history check' finds the runs at which
a series changed level, and says what changed. See docs/history.md.

Figures (METRIC): publishRate, consumeRate, publishMBps, consumeMBps;
publish, service, e2e and sendLag latencies in ms, each .mean .p50 .p95
.p99 .p99.9 .max (e.g. e2e.p99); sent, acked, failed, consumed, lost,
duplicated, ...; clientCpu, brokerCpu, otherCpu; maxRate.`,
	}
	cmd.PersistentFlags().StringVar(&path, "history", "", "the history store (default $BROKERBENCH_HISTORY, else $XDG_DATA_HOME/brokerbench/history.jsonl, else ~/.local/share/brokerbench/history.jsonl)")
	open := func() (*history.Store, error) {
		p := path
		if p == "" {
			p = history.DefaultPath()
		}
		if p == "" {
			return nil, usageError{fmt.Errorf("no history: $%s turns it off; name one with --history", history.PathEnv)}
		}
		return history.Open(p), nil
	}
	read := func() (*history.Contents, error) {
		s, err := open()
		if err != nil {
			return nil, err
		}
		c, err := s.Records()
		if err != nil {
			return nil, err
		}
		if c.Damaged > 0 || c.Newer > 0 {
			fmt.Fprintf(io.Err, "warning: %s: %d damaged line(s) and %d record(s) of a newer brokerbench left out\n", s.Path, c.Damaged, c.Newer)
		}
		return c, nil
	}
	cmd.AddCommand(newHistoryListCmd(io, read), newHistoryShowCmd(io, read), newHistoryTrendCmd(io, read),
		newHistoryCompareCmd(io, read), newHistoryImportCmd(io, open), newHistoryCheckCmd(io, open, read), newHistoryReportCmd(io, read))
	return cmd
}

// filterFlags are the flags that select records.
type filterFlags struct {
	workload, broker, version, since string
	labels                           []string
}

// add adds the filter flags to fl; what says what they select.
func (f *filterFlags) add(fl *pflag.FlagSet, what string) {
	fl.StringVar(&f.workload, "workload", "", what+" of this workload (its name)")
	fl.StringVar(&f.broker, "broker", "", what+" on this broker (its driver's name: kafka, rabbitmq, memory, ...)")
	fl.StringVar(&f.version, "version", "", what+" of this broker version, or versions starting so (4.1 matches 4.1.0)")
	fl.StringVar(&f.since, "since", "", what+" since a date (2026-01-31) or for a while back (36h, 7d)")
	fl.StringArrayVar(&f.labels, "label", nil, what+" with this label, key=value (repeatable)")
}

// filter is the filter the flags make.
func (f *filterFlags) filter() (history.Filter, error) {
	labels, err := history.Labels(f.labels)
	if err != nil {
		return history.Filter{}, usageError{err}
	}
	since, err := history.ParseSince(f.since, time.Now())
	if err != nil {
		return history.Filter{}, usageError{err}
	}
	return history.Filter{Workload: f.workload, Broker: f.broker, Version: f.version, Since: since, Labels: labels}, nil
}

// readHistory reads the history the command names.
type readHistory func() (*history.Contents, error)

func newHistoryListCmd(io IO, read readHistory) *cobra.Command {
	var f filterFlags
	var last int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the runs of the history, oldest first",
		Example: `  brokerbench history list --workload quick --since 7d
  brokerbench history list --broker kafka --version 4.1 --label ci=nightly`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			flt, err := f.filter()
			if err != nil {
				return err
			}
			c, err := read()
			if err != nil {
				return err
			}
			recs := c.Select(flt)
			if last > 0 && len(recs) > last {
				recs = recs[len(recs)-last:]
			}
			history.PrintList(io.Out, recs)
			return nil
		},
	}
	f.add(cmd.Flags(), "runs")
	cmd.Flags().IntVar(&last, "last", 0, "only the most recent N runs of those selected (0: all)")
	return cmd
}

func newHistoryShowCmd(io IO, read readHistory) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show everything the history holds of a run (an id, or its start)",
		Args:  oneArg("run id"),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := read()
			if err != nil {
				return err
			}
			r, err := c.Get(args[0])
			if err != nil {
				return usageError{err}
			}
			history.PrintRecord(io.Out, r)
			return nil
		},
	}
}

func newHistoryTrendCmd(io IO, read readHistory) *cobra.Command {
	var f filterFlags
	cmd := &cobra.Command{
		Use:   "trend METRIC --workload W",
		Short: "A metric over time: a sparkline and a table per series",
		Example: `  brokerbench history trend e2e.p99 --workload quick
  brokerbench history trend publishRate --workload quick --broker kafka`,
		Args: oneArg("metric"),
		RunE: func(_ *cobra.Command, args []string) error {
			flt, err := f.filter()
			if err != nil {
				return err
			}
			if flt.Workload == "" {
				return usageError{errors.New("history trend needs --workload")}
			}
			c, err := read()
			if err != nil {
				return err
			}
			history.PrintTrend(io.Out, c.Select(flt), args[0])
			return nil
		},
	}
	f.add(cmd.Flags(), "runs")
	return cmd
}

func newHistoryCompareCmd(io IO, read readHistory) *cobra.Command {
	return &cobra.Command{
		Use:   "compare A B",
		Short: "What differs between two runs (settings, environment), then their figures and the change",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("history compare takes exactly two run ids, got %d", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := read()
			if err != nil {
				return err
			}
			a, err := c.Get(args[0])
			if err != nil {
				return usageError{err}
			}
			b, err := c.Get(args[1])
			if err != nil {
				return usageError{err}
			}
			history.PrintCompare(io.Out, a, b)
			return nil
		},
	}
}

func newHistoryImportCmd(io IO, open func() (*history.Store, error)) *cobra.Command {
	var labels []string
	cmd := &cobra.Command{
		Use:   "import PATH...",
		Short: "Add runs to the history: results files, study directories, OMB result JSON",
		Long: `import adds the runs in each PATH: a brokerbench results file, a study
directory, an OpenMessaging Benchmark result JSON (OMB's own, or
brokerbench's --omb-json), or a directory holding any of these (searched
recursively). Runs the history holds already are skipped, so importing
twice adds nothing. An OMB result has no id, time or environment: its id
is a hash of its content, its time the file's, its environment unknown.`,
		Example: `  brokerbench history import results/
  brokerbench history import results/my-study --label baseline=yes
  brokerbench history import ~/omb/kafka-1-topic-2026-01-31.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			lbl, err := history.Labels(labels)
			if err != nil {
				return usageError{err}
			}
			s, err := open()
			if err != nil {
				return err
			}
			im, err := history.Import(args, lbl)
			if err != nil {
				return usageError{err}
			}
			for _, sk := range im.Skipped {
				fmt.Fprintf(io.Err, "skipped %s\n", sk)
			}
			n, err := s.Add(im.Records...)
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "imported %d run(s) into %s (%d found, %d there already, %d file(s) skipped)\n",
				n, s.Path, len(im.Records), len(im.Records)-n, len(im.Skipped))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label the imported runs, key=value (repeatable)")
	return cmd
}

func newHistoryCheckCmd(io IO, open func() (*history.Store, error), read readHistory) *cobra.Command {
	var f filterFlags
	var metrics []string
	var reruns int
	o := history.CheckOptions{Threshold: history.DefaultThreshold}
	ro := engine.DefaultRunOptions()
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Find the runs at which a series changed level, and what changed; fail on a regression",
		Long: `check groups the runs into series (the same benchmark on the same number of
nodes, oldest first; runs whose verdict is interrupted, failed, disturbed
or load-generator-bound left out, unless --all-runs) and searches each metric of each series
for change points (E-divisive means with a permutation test: see
internal/changepoint). For each it prints the shift, its confidence and
what changed between the last run before and the first run after it: the
broker version, a driver setting, brokerbench's version, the machine.

A series needs at least 10 runs (5 on either side of a change). Runs
labelled rerun=... (made by --rerun) are in no series.

--rerun N makes the last run before and the first run after each change
point again, N times each, alternately (before, after, before, ...): each
its workload and effective driver settings from its results file, on
--rerun-broker, else the local cluster (of each side's broker release,
when the two differ). The reruns are recorded labelled rerun=<id of the
run repeated>. A change is CONFIRMED when the reruns' means differ in its
direction by at least half its size, REVERSED when they differ the other
way by at least --threshold (the recorded runs of one side were off: the
reruns' direction counts), else DISMISSED. A run whose results
mask a secret setting cannot be made again: rerun it by hand with its
driver file.

Exit codes: 0 no regression beyond --threshold, 8 a regression beyond it
(a change for the worse: lower rates, higher latencies; with --rerun, one
the reruns show), 2 invalid flags or a run that cannot be made
again, 1 the history could not be read or a rerun failed.`,
		Example: `  brokerbench history check
  brokerbench history check --workload quick --metric e2e.p99 --threshold 0.1
  brokerbench history check --label ci=nightly --since 30d
  brokerbench history check --workload quick --rerun 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flt, err := f.filter()
			if err != nil {
				return err
			}
			if o.Threshold < 0 {
				return usageError{errors.New("--threshold must not be negative")}
			}
			if reruns < 0 || reruns > history.MaxReruns {
				return usageError{fmt.Errorf("--rerun must be between 1 and %d (0: no reruns), got %d", history.MaxReruns, reruns)}
			}
			if reruns == 0 && (cmd.Flags().Changed("rerun-broker") || cmd.Flags().Changed("local-port") || cmd.Flags().Changed("replace")) {
				return usageError{errors.New("--rerun-broker, --local-port and --replace apply only with --rerun")}
			}
			c, err := read()
			if err != nil {
				return err
			}
			o.Metrics = metrics
			checked, err := history.Check(c.Select(flt), o)
			if err != nil {
				return usageError{err}
			}
			err = checked.Report(io.Out, o.Threshold)
			if reruns == 0 || err != nil && !errors.Is(err, history.ErrRegression) {
				return err
			}
			s, err := open()
			if err != nil {
				return err
			}
			ro.Given = cmd.Flags().Changed
			given(cmd, &ro.Local)
			ro.History = history.Recording{Path: s.Path}
			return engine.Recheck(cmd.Context(), io, checked, reruns, o.Threshold, ro)
		},
	}
	f.add(cmd.Flags(), "check the runs")
	fl := cmd.Flags()
	fl.IntVar(&reruns, "rerun", 0, fmt.Sprintf("make the runs on either side of each change point again, this many times each (1 to %d), alternately, and fail only on the regressions the reruns confirm", history.MaxReruns))
	fl.StringVar(&ro.Broker, "rerun-broker", ro.Broker, "with --rerun: broker address(es) to rerun on, comma-separated (default: the local cluster)")
	addLocalTarget(fl, &ro.Local)
	fl.StringSliceVar(&metrics, "metric", nil, "metrics to check, comma-separated or repeated (default "+strings.Join(history.DefaultCheckMetrics, ",")+")")
	fl.Float64Var(&o.Threshold, "threshold", o.Threshold, "smallest relative shift of a regression that fails the check (0.05: 5%)")
	fl.BoolVar(&o.AllRuns, "all-runs", o.AllRuns, "also check runs whose verdict is interrupted, failed, disturbed or load-generator-bound (on a shared CI machine)")
	fl.Uint64Var(&o.Detect.Seed, "seed", 0, "seed of the permutation test's shuffles")
	return cmd
}

func newHistoryReportCmd(io IO, read readHistory) *cobra.Command {
	var benchmark, out string
	o := report.HistoryOptions{Threshold: history.DefaultThreshold}
	cmd := &cobra.Command{
		Use:   "report --benchmark ID",
		Short: "Write one benchmark's history as an HTML page: each figure run by run, change points marked and explained",
		Long: `report writes the history of one benchmark (its hash, or the first
characters of it, as 'history trend' and 'history check' print it) as one
HTML page that opens offline: for each series (a number of nodes) and each
metric, the values run by run, oldest first, named by broker release when
the runs span several, drawn as interactive charts (zoom, hover); the
change points 'history check' finds are marked, and beside each chart are
the shift and what changed between the runs on either side; then the runs.
Runs whose verdict is interrupted, failed, disturbed or load-generator-bound
are left out unless --all-runs.`,
		Example: `  brokerbench history report --benchmark 68c325a56e2a --out history.html
  brokerbench history report --benchmark 68c3 --metric publishRate,e2e.p99 --all-runs`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.Threshold < 0 {
				return usageError{errors.New("--threshold must not be negative")}
			}
			c, err := read()
			if err != nil {
				return err
			}
			recs, err := c.OfBenchmark(benchmark)
			if err != nil {
				return usageError{err}
			}
			if err := report.WriteHistory(recs, o, out, sysinfo.Version); err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "wrote %s: %d run(s) of benchmark %s\n", out, len(recs), recs[0].Benchmark)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&benchmark, "benchmark", "", "the benchmark: its hash, or its first characters")
	fl.StringVarP(&out, "out", "o", "history.html", "the HTML page to write")
	fl.StringSliceVar(&o.Metrics, "metric", nil, "metrics to chart and check, comma-separated or repeated (default "+strings.Join(history.DefaultCheckMetrics, ",")+")")
	fl.Float64Var(&o.Threshold, "threshold", o.Threshold, "smallest relative shift of a change for the worse marked a regression (0.05: 5%)")
	fl.BoolVar(&o.AllRuns, "all-runs", o.AllRuns, "also chart runs whose verdict is interrupted, failed, disturbed or load-generator-bound (on a shared CI machine)")
	_ = cmd.MarkFlagRequired("benchmark")
	return cmd
}
