package cli

import (
	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/engine"
)

func newCleanCmd(io IO) *cobra.Command {
	o := engine.DefaultCleanOptions()
	var list bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the topics that runs which did not finish left behind",
		Long: `Every run records the topics it creates in a registry on this machine
(under the brokerbench cache) until it has deleted them. A run killed
outright (SIGKILL, the out-of-memory killer, a lost machine) or whose
teardown was abandoned leaves its record behind. 'clean' removes those runs'
topics from the broker given as for 'run' (--broker, --driver, else the local
Kafka broker) and forgets them; 'clean --list' shows every such run, on any
broker, without connecting. The next run against the same broker does the
same cleaning by itself.`,
		Example: `  brokerbench clean --list
  brokerbench clean
  brokerbench clean --broker 10.0.0.5:9092`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if list {
				return engine.ListLeftovers(io)
			}
			given(cmd, &o.Local)
			return engine.Clean(cmd.Context(), io, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Broker, "broker", o.Broker, "broker addresses, comma-separated (default: the driver file's, else the local broker)")
	fl.StringVar(&o.DriverFile, "driver", o.DriverFile, "driver file (OMB or brokerbench format) of the broker to clean")
	fl.BoolVar(&list, "list", false, "list the runs that left topics behind, on any broker, without connecting")
	addLocalTarget(fl, &o.Local)
	return cmd
}
