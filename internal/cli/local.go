package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/local"
)

type localFlags struct {
	portFlag string // "port" or "local-port"
	port     int
	stateDir string
	heapMB   int
}

func (f *localFlags) register(cmd *cobra.Command) {
	f.portFlag = "port"
	cmd.Flags().IntVar(&f.port, "port", 9092, "client port on 127.0.0.1 (the controller uses port+1)")
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "directory for data, logs and PID file (default: per port, under the brokerbench cache)")
	cmd.Flags().IntVar(&f.heapMB, "heap-mb", 1024, "broker JVM heap in MiB")
}

// registerTarget adds --local-port to a command that runs against the local
// broker when no address is given (run, study).
func (f *localFlags) registerTarget(cmd *cobra.Command) {
	f.portFlag = "local-port"
	cmd.Flags().IntVar(&f.port, "local-port", 9092, "port of the local Kafka broker used when no broker address is given")
	f.heapMB = 1024
}

// validate checks the local broker flags; flag is the port flag's name.
func (f *localFlags) validate() error {
	var errs []error
	if f.port < 1 || f.port > 65534 {
		errs = append(errs, usageError{fmt.Errorf("--%s: must be between 1 and 65534 (the controller takes the port above it), got %d", f.portFlag, f.port)})
	}
	if f.heapMB < 128 {
		errs = append(errs, usageError{fmt.Errorf("--heap-mb: must be at least 128, got %d", f.heapMB)})
	}
	return errors.Join(errs...)
}

// portAdvice is what to do about err, if the local broker's port is taken,
// naming the flag of the command at hand.
func (f *localFlags) portAdvice(err error) string {
	if !errors.Is(err, local.ErrPortInUse) {
		return ""
	}
	return fmt.Sprintf(": stop that process, or choose another port with --%s", f.portFlag)
}

func (f *localFlags) kafka(io IO) *local.Kafka {
	k := local.NewKafka(f.port)
	if f.stateDir != "" {
		k.StateDir = f.stateDir
	}
	k.HeapMB = f.heapMB
	k.Log = io.Err
	return k
}

func newLocalCmd(io IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Install, start, stop and inspect brokers on this machine",
		Long: `local manages brokers that brokerbench installs and runs on 127.0.0.1.
Kafka is installed from Maven Central (needs Java 17+ and Maven) into the
brokerbench cache ($BROKERBENCH_CACHE, default ~/.cache/brokerbench) and runs
as a single KRaft node.`,
	}
	var f localFlags
	check := func(args []string) error {
		if len(args) != 1 || args[0] != "kafka" {
			return usageError{fmt.Errorf("name the broker: only \"kafka\" is supported so far")}
		}
		return f.validate()
	}
	up := &cobra.Command{
		Use:     "up kafka",
		Short:   "Install (if needed) and start a local broker; wait until it accepts requests",
		Example: "  brokerbench local up kafka\n  brokerbench local up kafka --port 19092",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := check(args); err != nil {
				return err
			}
			st, err := f.kafka(io).Up(cmd.Context())
			if err != nil {
				return fmt.Errorf("%w%s", err, f.portAdvice(err))
			}
			fmt.Fprintf(io.Out, "kafka %s running on %s (pid %d)\nlog: %s\n", st.Version, st.Address, st.PID, st.LogFile)
			return nil
		},
	}
	down := &cobra.Command{
		Use:     "down kafka",
		Short:   "Stop a local broker by its PID",
		Example: "  brokerbench local down kafka",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := check(args); err != nil {
				return err
			}
			return f.kafka(io).Down()
		},
	}
	var asJSON bool
	status := &cobra.Command{
		Use:     "status kafka",
		Short:   "Report whether a local broker runs, its PID, address and log",
		Example: "  brokerbench local status kafka\n  brokerbench local status kafka --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := check(args); err != nil {
				return err
			}
			st := f.kafka(io).Status()
			if asJSON {
				b, _ := json.MarshalIndent(st, "", "  ")
				fmt.Fprintln(io.Out, string(b))
				return nil
			}
			if st.Running {
				fmt.Fprintf(io.Out, "kafka %s: running on %s (pid %d)\nlog: %s\n", st.Version, st.Address, st.PID, st.LogFile)
			} else {
				fmt.Fprintf(io.Out, "kafka %s: not running (port %s, state %s)\n", st.Version, st.Address, st.StateDir)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	for _, c := range []*cobra.Command{up, down, status} {
		f.register(c)
		cmd.AddCommand(c)
	}
	return cmd
}
