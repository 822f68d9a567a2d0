// Package cli implements the brokerbench command line. Commands write to
// the streams in IO and return errors that carry an exit code, so the whole
// CLI can be driven from tests.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
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
)

// IO holds the streams commands use.
type IO struct {
	Out, Err io.Writer
}

// exitError attaches an exit code to an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

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

// exitCode is the process exit code for a command's error.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, workload.ErrInvalid) || isUsage(err) {
		return ExitInvalidInput
	}
	return ExitRunFailed
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
	root.AddCommand(newRunCmd(io), newStudyCmd(io), newReportCmd(io), newCompareCmd(io), newLocalCmd(io), newCleanCmd(io), newVersionCmd(io), newWorkerCmd(io), newK8sCmd(io))
	return root
}
