package cli

import (
	"slices"
	"testing"
)

// machineBound are the exit codes of a run that completed and accounted
// for its messages, but whose rate the machine decided: a target not held
// (or a backlog that grew because the consumers could not keep up), the
// load generator the bottleneck, and other processes taking the CPU. A
// test about something other than the rate (secrets, TLS, an endpoint,
// what a fault loses) accepts them beside ExitOK; the runner's tests
// assert rates and verdicts where time is controlled.
var machineBound = []int{ExitTargetNotHeld, ExitLoadGeneratorBound, ExitDisturbed}

// completed reports whether code is that of a run that completed: ExitOK,
// or a verdict about its rate that a busy machine may give, which it logs.
func completed(t *testing.T, code int) bool {
	t.Helper()
	if slices.Contains(machineBound, code) {
		t.Logf("exit %d: a verdict on the rate this machine held, accepted here", code)
		return true
	}
	return code == ExitOK
}
