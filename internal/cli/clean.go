package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/workload"
)

type cleanFlags struct {
	broker, driverFile string
	list               bool
	local              localFlags
}

func newCleanCmd(io IO) *cobra.Command {
	f := &cleanFlags{}
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
			if f.list {
				return listLeftovers(io)
			}
			if err := f.local.validate(); err != nil {
				return err
			}
			dc := defaultDriver()
			if f.driverFile != "" {
				var err error
				if dc, err = workload.LoadDriver(f.driverFile); err != nil {
					return err
				}
			}
			sig := watchInterrupts(cmd.Context(), io.Err)
			defer sig.release()
			tgt := newTarget(io, f.broker, f.local)
			drv, env, err := tgt.connect(sig.stop, dc)
			if err != nil {
				return err
			}
			defer closeBounded(drv, sig.abandon)
			cleanLeftovers(sig.stop, io, drv, dc.Name, targetKey(env, dc.Source))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.broker, "broker", "", "broker addresses, comma-separated (default: the driver file's, else the local broker)")
	fl.StringVar(&f.driverFile, "driver", "", "driver file (OMB or brokerbench format) of the broker to clean")
	fl.BoolVar(&f.list, "list", false, "list the runs that left topics behind, on any broker, without connecting")
	f.local.registerTarget(cmd)
	return cmd
}

// listLeftovers prints every dead run's record.
func listLeftovers(io IO) error {
	dead, err := registry().Dead()
	if err != nil {
		return withCode(ExitRunFailed, fmt.Errorf("topic registry: %w", err))
	}
	if len(dead) == 0 {
		fmt.Fprintln(io.Out, "no run left topics behind")
		return nil
	}
	for _, e := range dead {
		fmt.Fprintf(io.Out, "run %s (pid %d, started %s) on %s at %s: %s\n", e.RunID, e.PID,
			e.StartedAt.Local().Format(time.DateTime), e.Driver, e.Target, strings.Join(e.Topics, ", "))
	}
	return nil
}
