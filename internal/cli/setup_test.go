package cli

import (
	"strings"
	"testing"
)

// TestSetupTimeoutFlag: a negative --setup-timeout is refused before any
// broker is reached (0 is the default: the bound scaled to the workload).
func TestSetupTimeoutFlag(t *testing.T) {
	code, stdout, stderr := execute("run", "../../workloads/quick.yaml", "--broker", "127.0.0.1:1", "--setup-timeout", "-1s")
	if code != ExitInvalidInput || !strings.Contains(stderr, "--setup-timeout: must not be negative") {
		t.Errorf("exit %d (want %d), stderr %q\nstdout: %s", code, ExitInvalidInput, stderr, stdout)
	}
}
