// Package cli implements the brokerbench command line. Commands write to
// the streams in IO and return errors that carry an exit code, so the whole
// CLI can be driven from tests.
package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/secret"
)

// Exit codes. Scripts can tell bad input from a failed or dishonest run.
const (
	ExitOK             = 0
	ExitRunFailed      = 1 // the run could not be made (broker unreachable, setup failed)
	ExitInvalidInput   = 2 // bad flags, workload or driver file
	ExitTargetNotHeld  = 3 // the run completed but did not hold its target rate, or its consumers fell behind
	ExitInterrupted    = 4 // interrupted; partial results were written
	ExitAccountingFail = 5 // acknowledged and stored message counts disagree
	// ExitLoadGeneratorBound: the target was missed because brokerbench
	// itself could not keep its schedule; the run does not measure the broker.
	ExitLoadGeneratorBound = 6
	// ExitDisturbed: other processes took so much of the machine that
	// the figures describe a shared machine, not the broker (also a
	// max-rate search that could not measure for that reason).
	ExitDisturbed = 7
	// ExitRegression: history check found a regression beyond its
	// threshold.
	ExitRegression = 8
)

// IO holds the streams commands use.
type IO = engine.IO

// Execute runs the command line args and returns the process exit code.
func Execute(ctx context.Context, args []string, io IO) int {
	// Secrets from the configs never reach the terminal: not in
	// progress, summaries, or errors.
	io.Out, io.Err = secret.Writer(io.Out), secret.Writer(io.Err)
	root := newRoot(io)
	root.SetArgs(args)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	err := root.ExecuteContext(ctx)
	if err != nil && err.Error() != "" {
		fmt.Fprintf(io.Err, "brokerbench: %v\n", err)
	}
	return exitCode(err)
}

// exitCodes are the process exit codes of the engine's kinds of failure.
var exitCodes = map[engine.Kind]int{
	engine.RunFailed: ExitRunFailed, engine.BadInput: ExitInvalidInput, engine.Interrupted: ExitInterrupted,
	engine.TargetNotHeld: ExitTargetNotHeld, engine.AccountingMismatch: ExitAccountingFail,
	engine.LoadGeneratorBound: ExitLoadGeneratorBound, engine.Disturbed: ExitDisturbed,
}

// exitCode is the process exit code for a command's error: the one place
// errors become exit codes. The exit status of another brokerbench
// process (a Kubernetes coordinator) is kept as it is.
func exitCode(err error) int {
	var status *engine.ExitStatus
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &status):
		return status.Code
	case isUsage(err) && !engine.IsKinded(err):
		return ExitInvalidInput
	case errors.Is(err, history.ErrRegression):
		return ExitRegression
	}
	return exitCodes[engine.KindOf(err)]
}

// usageError marks flag and argument mistakes.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func newRoot(io IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "brokerbench",
		Short: "Benchmark message brokers honestly",
		Long: `brokerbench runs declarative workloads against message brokers and reports
throughput, latency measured from the intended send time, and exact message
accounting. It reads its own workload format and OpenMessaging Benchmark files.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what the version command prints.
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(io), newStudyCmd(io), newReportCmd(io), newCompareCmd(io), newLocalCmd(io), newCleanCmd(io), newVersionCmd(io), newWorkerCmd(io), newK8sCmd(io), newHistoryCmd(io), newCaptureCmd(io))
	return root
}
