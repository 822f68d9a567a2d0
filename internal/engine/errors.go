package engine

import (
	"errors"
	"fmt"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Kind is what kind of failure an error of the engine is: the command
// line turns it into the process's exit code, so that scripts can tell
// bad input from a failed or dishonest run.
type Kind int

// Kinds of failure. The zero Kind is no failure.
const (
	// RunFailed: the run could not be made (broker unreachable, setup
	// failed) or a file could not be written.
	RunFailed Kind = iota + 1
	// BadInput: bad options, workload, driver or study file.
	BadInput
	// Interrupted: interrupted; partial results were written.
	Interrupted
	// TargetNotHeld: the run completed but did not hold its target rate,
	// or its consumers fell behind.
	TargetNotHeld
	// AccountingMismatch: acknowledged and stored message counts
	// disagree.
	AccountingMismatch
	// LoadGeneratorBound: the target was missed because brokerbench
	// itself could not keep its schedule.
	LoadGeneratorBound
	// Disturbed: other processes took so much of the machine that the
	// figures describe a shared machine, not the broker.
	Disturbed
)

// Error is an error of a given kind.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// WithKind returns err marked as of kind k; nil for a nil err.
func WithKind(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Err: err}
}

// badInput marks err as bad input.
func badInput(err error) error { return WithKind(BadInput, err) }

// badInputf is badInput of a formatted error.
func badInputf(format string, args ...any) error { return badInput(fmt.Errorf(format, args...)) }

// failed marks err as a failed run.
func failed(err error) error { return WithKind(RunFailed, err) }

// KindOf returns the kind of err: that of the outermost Error in its
// chain; else BadInput for an invalid workload (workload.ErrInvalid),
// else RunFailed. It is 0 for a nil err.
func KindOf(err error) Kind {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, workload.ErrInvalid) {
		return BadInput
	}
	return RunFailed
}

// IsKinded reports whether an Error in err's chain gives its kind.
func IsKinded(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// ExitStatus is the exit status of another brokerbench process (a
// Kubernetes coordinator) that this one ends with as its own.
type ExitStatus struct {
	Code int
	Err  error
}

func (e *ExitStatus) Error() string { return e.Err.Error() }
func (e *ExitStatus) Unwrap() error { return e.Err }

// verdictKinds is the kind of failure of each verdict of a run.
var verdictKinds = map[results.VerdictKind]Kind{
	results.OK: 0, results.Failed: RunFailed, results.TargetNotHeld: TargetNotHeld,
	results.Interrupted: Interrupted, results.AccountingMismatch: AccountingMismatch,
	results.LoadGeneratorBound: LoadGeneratorBound, results.Disturbed: Disturbed,
	results.ConsumerBound: TargetNotHeld,
}
