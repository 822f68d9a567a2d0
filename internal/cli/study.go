package cli

import (
	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/engine"
)

func newStudyCmd(io IO) *cobra.Command {
	o := engine.DefaultStudyOptions()
	var hist historyFlags
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
		Args: oneArg("study file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			given(cmd, &o.Local)
			var err error
			if o.History, err = hist.recording(); err != nil {
				return err
			}
			return engine.Study(cmd.Context(), io, args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.List, "list", o.List, "print the planned runs (and which are skipped, and why) without running them")
	fl.StringVar(&o.Scale, "scale", o.Scale, "quick (minutes), full (the published durations), or smoke (one 1 s run per setup: checks the plan, setups and report end to end; its figures mean nothing)")
	fl.StringVarP(&o.Out, "out", "o", o.Out, "results directory (default results/<study>-<scale>)")
	fl.StringVar(&o.Broker, "broker", o.Broker, "broker address(es); default: the local Kafka broker, started if needed")
	addBrokerMetrics(fl, &o.BrokerMetrics)
	fl.BoolVar(&o.Progress, "progress", o.Progress, "print a progress line per interval of every run (as 'run' does by default)")
	fl.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "serve live figures of the run in progress for Prometheus on http://ADDR/metrics while the study lasts")
	fl.BoolVarP(&o.Quiet, "quiet", "q", o.Quiet, "no progress lines and no line per run: only the study's outcome (as 'run --quiet')")
	addLocalTarget(fl, &o.Local)
	addHistoryFlags(fl, &hist)
	return cmd
}
