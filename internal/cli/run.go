package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brokerbench/brokerbench/internal/engine"
)

func newRunCmd(io IO) *cobra.Command {
	o := engine.DefaultRunOptions()
	var quiet bool
	var hist historyFlags
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
running afterwards (stop it with 'brokerbench local down kafka'). Given
--local-brokers, run uses that local cluster even when the driver config
names addresses: its addresses replace them (OMB's driver files name
localhost, which the nodes of a local cluster of several brokers are
not on). A
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
		Args: oneArg("workload file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Overrides, o.Given, o.Progress = overrides(cmd), cmd.Flags().Changed, o.Progress && !quiet
			given(cmd, &o.Local)
			var err error
			if o.History, err = hist.recording(); err != nil {
				return err
			}
			return engine.Run(cmd.Context(), io, args[0], o)
		},
	}
	fl := cmd.Flags()
	addOverrides(fl)
	addTiming(fl, &o)
	addBrokerMetrics(fl, &o.BrokerMetrics)
	addLocalTarget(fl, &o.Local)
	addHistoryFlags(fl, &hist)
	addRunFlags(fl, &o, &quiet)
	addWorkers(fl, &o.Workers)
	fl.IntVar(&o.Local.Brokers, "local-brokers", o.Local.Brokers, fmt.Sprintf("brokers of the local cluster used when no broker address is given, 1 to %d; given, it replaces the driver config's addresses too (default: a running cluster with at least the workload's replication factor of brokers, used as it is; else one of that many, started for the run)", engine.MaxLocalBrokers))
	fl.BoolVar(&o.Local.Links, "local-links", o.Local.Links, "run the local cluster's links through brokerbench's link proxy (implied by link faults in the workload)")
	fl.StringVar(&o.Local.Version, "local-version", o.Local.Version, "broker release of the local cluster used when no broker address is given (Kafka 3.7.0 or newer, nats-server 2.10.0 or newer; default: a running cluster of any release, used as it is; else the release brokerbench pins)")
	return cmd
}

// addWorkers declares the flags that spread a run over workers.
func addWorkers(fl *pflag.FlagSet, o *engine.WorkerOptions) {
	fl.StringSliceVar(&o.URLs, "workers", o.URLs, "spread the run over these workers ('brokerbench worker'), comma-separated http://host:port; the results are merged as one run's")
	fl.StringVar(&o.File, "workers-file", o.File, "read the workers' URLs from this file, one per line")
	fl.IntVar(&o.Local, "local-workers", o.Local, "spread the run over this many worker processes started on this machine, each on its own loopback address")
	fl.DurationVar(&o.Wait, "workers-wait", o.Wait, "wait this long for workers that do not answer yet (pods starting); 0 fails at once")
	fl.StringVar(&o.Placement, "placement", o.Placement, "how producers and consumers are spread over workers: spread (in turn by id) or by-topic (each topic's on one worker: end-to-end latency on one clock)")
}

// addRunFlags declares the flags only run has, bound to o; --quiet sets
// quiet.
func addRunFlags(fl *pflag.FlagSet, o *engine.RunOptions, quiet *bool) {
	fl.StringVarP(&o.DriverFile, "driver", "d", o.DriverFile, "driver config file (OMB or brokerbench format); default: the workload's inline driver, else Kafka")
	fl.StringVar(&o.Broker, "broker", o.Broker, "broker address(es), comma-separated; overrides the driver config")
	fl.StringVarP(&o.Out, "out", "o", o.Out, "results JSON path (default results/<workload>-<run id>.json)")
	fl.StringVar(&o.OMBJSON, "omb-json", o.OMBJSON, "also write OMB TestResult JSON to this path")
	fl.StringVar(&o.Topics, "topic", o.Topics, "use these existing topics (comma-separated, one per workload topic) instead of creating new ones; they are not deleted")
	fl.BoolVar(&o.KeepTopics, "keep-topics", o.KeepTopics, "do not delete the run's topics afterwards")
	fl.DurationVar(&o.SetupTimeout, "setup-timeout", o.SetupTimeout, "bound on the setup: creating the topics and the clients, and the consumers joining their groups (0: scaled to the workload, 60s + 1s per topic and per consumer group + 250ms per consumer)")
	fl.DurationVar(&o.BacklogTimeout, "backlog-timeout", o.BacklogTimeout, "bound on each of a backlog test's build and drain phases")
	fl.BoolVar(&o.FindMaxRate, "find-max-rate", o.FindMaxRate, "search for the highest rate the broker sustains (see --slo); each step is a full run of --warmup + --duration")
	fl.StringVar(&o.SLO, "slo", o.SLO, "latency objectives a sustained rate must meet, e.g. 'p99<50ms,e2e.p99.9<200ms'")
	fl.IntVar(&o.MaxSteps, "max-steps", o.MaxSteps, "most fixed-rate steps of --find-max-rate after its unthrottled warm-up and probe")
	fl.DurationVar(&o.Ramp, "ramp", o.Ramp, "with --find-max-rate: find the knee with one run whose rate ramps from a sixteenth to 1.25 times the probe's over --warmup plus this duration, then confirm it with constant runs (0: double and bisect constant runs)")
	fl.IntVar(&o.Repeats, "repeats", o.Repeats, "times --find-max-rate runs the found rate and the failed rate above it again, to show how repeatable the answer is (0 for none)")
	fl.Float64Var(&o.PerNodeHour, "price-per-node-hour", o.PerNodeHour, "cost of one broker node per hour: the summary and results then give the cost per billion messages")
	fl.IntVar(&o.Nodes, "nodes", o.Nodes, "number of broker nodes --price-per-node-hour applies to")
	fl.StringVar(&o.PprofDir, "pprof", o.PprofDir, "write CPU and heap profiles of the load generator (cpu.pprof, heap.pprof) to this directory")
	fl.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "serve live figures for Prometheus on http://ADDR/metrics while the run lasts (e.g. 127.0.0.1:9464)")
	fl.BoolVar(&o.NoLatencyRecording, "no-latency-recording", o.NoLatencyRecording, "record no latencies (measures what recording costs; for bench/ only)")
	_ = fl.MarkHidden("no-latency-recording")
	fl.BoolVar(&o.Progress, "progress", o.Progress, "print a progress line per interval (as 'study --progress')")
	fl.BoolVarP(quiet, "quiet", "q", false, "no progress lines: the same as --progress=false")
}
