package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brokerbench/brokerbench/internal/engine"
)

// The flag builders declare the flags that run, study, clean, k8s run and
// worker share, each bound to a field of an engine options struct whose
// value when declared is the flag's default: the defaults live in the
// options' Default functions alone.

// overrideFlags are the workload fields a command line may set.
var overrideFlags = []string{"duration", "warmup", "rate", "messages"}

// addOverrides declares the flags of overrideFlags; overrides reads them.
func addOverrides(fl *pflag.FlagSet) {
	fl.Duration("duration", 0, "override the measurement duration (e.g. 30s)")
	fl.Duration("warmup", 0, "override the warmup duration (e.g. 5s)")
	fl.Float64("rate", 0, "override the total producer rate in msg/s (0 = max rate)")
	fl.Int64("messages", 0, "stop producing after this many messages in total")
}

// overrides are the workload fields the command line of cmd sets.
func overrides(cmd *cobra.Command) []engine.Override {
	var out []engine.Override
	for _, name := range overrideFlags {
		if f := cmd.Flags().Lookup(name); f.Changed {
			out = append(out, engine.Override{Name: name, Value: f.Value.String()})
		}
	}
	return out
}

// timingFlags are the run options a coordinator on Kubernetes is handed
// as given, with the overrides.
var timingFlags = []string{"max-send-lag", "drain-timeout", "interval"}

// addTiming declares the flags of timingFlags bound to o.
func addTiming(fl *pflag.FlagSet, o *engine.RunOptions) {
	fl.DurationVar(&o.Interval, "interval", o.Interval, "sampling interval")
	fl.DurationVar(&o.DrainTimeout, "drain-timeout", o.DrainTimeout, "how long to wait for consumers to catch up after producing stops")
	fl.DurationVar(&o.MaxSendLag, "max-send-lag", o.MaxSendLag, "highest send lag p99 with which a fixed-rate run holds its target (0: 10ms beyond the machine's scheduling delay p99, measured in the run; negative: no limit)")
}

// addBrokerMetrics declares --broker-metrics bound to urls.
func addBrokerMetrics(fl *pflag.FlagSet, urls *[]string) {
	fl.StringSliceVar(urls, "broker-metrics", *urls, "the brokers' metrics endpoints, comma-separated, read at every interval into the results, each in the form its broker's nodes serve (Prometheus at http://host:port/metrics, NATS's /varz, redis://host:port, ...: docs/drivers/BROKER.md) (default: the local cluster's own)")
}

// addLocalTarget declares --local-port and --replace for a command that
// runs against the local broker when no address is given (run, study,
// clean).
func addLocalTarget(fl *pflag.FlagSet, o *engine.LocalOptions) {
	fl.IntVar(&o.Port, "local-port", o.Port, "client port of the local broker used when no broker address is given (default: the broker's usual port, Kafka 9092)")
	fl.BoolVar(&o.Replace, "replace", o.Replace, "replace a local cluster that does not fit the runs even if 'local up' started it, deleting its data (without it, such a cluster is left as it is and the command stops with what to do)")
}

// addLocalCluster declares the flags of 'local' commands that describe
// a cluster.
func addLocalCluster(fl *pflag.FlagSet, o *engine.LocalOptions) {
	fl.IntVar(&o.Port, "port", o.Port, "client port of every broker, each on its own loopback address, other ports chosen free (default: the broker's usual port, Kafka 9092)")
	fl.StringVar(&o.StateDir, "state-dir", o.StateDir, "directory for the cluster's nodes: data, logs, configs, PID files (default: per port, under the brokerbench cache)")
	fl.IntVar(&o.HeapMB, "heap-mb", o.HeapMB, "JVM heap of each broker in MiB (default 1024 for one broker, 512 each in a cluster)")
	fl.IntVar(&o.Brokers, "brokers", o.Brokers, fmt.Sprintf("number of brokers, 1 to %d: one on 127.0.0.1, or broker i on 127.0.1.i", engine.MaxLocalBrokers))
	fl.IntVar(&o.Controllers, "controllers", o.Controllers, "dedicated KRaft controllers, on 127.0.2.j (0: the first three brokers are also the controllers)")
	fl.StringSliceVar(&o.Security, "security", o.Security, "client listeners the brokers serve, comma-separated, the first on --port and the others on free ports; Kafka: plaintext, ssl, sasl_plaintext, sasl_ssl (certificates and a SCRAM/PLAIN user made for the cluster; 'local status' says where)")
	fl.BoolVar(&o.Links, "links", o.Links, "route every connection between nodes, and from clients to nodes, through brokerbench's link proxy, so that workloads can delay, throttle or cut single links (link faults, study setups' network:)")
}

// given fills in which of o's flags the command line of cmd set.
func given(cmd *cobra.Command, o *engine.LocalOptions) {
	o.PortGiven = cmd.Flags().Changed(o.PortFlag)
	o.BrokersGiven = cmd.Flags().Changed(o.BrokersFlag)
}

// oneArg accepts exactly one argument, what names it.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageError{fmt.Errorf("%s takes exactly one %s, got %d arguments", cmd.CommandPath()[len(cmd.Root().Name())+1:], what, len(args))}
		}
		return nil
	}
}
