// Package local installs and runs broker clusters on this machine, for
// benchmarks that need no external cluster: one process per node, each
// node on its own loopback address, with one lifecycle (install,
// configure, start, stop, and faults: kill, pause, restart, resume) that
// every broker kind and cluster size shares. What differs between broker
// kinds is a Kind, which each broker's package (internal/brokers/<name>)
// provides with the hooks exported here; faults on the nodes are package
// localfaults'.
package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/internal/proc"
)

// DefaultCacheDir returns where downloaded broker distributions are kept:
// $BROKERBENCH_CACHE, else the user cache directory's "brokerbench".
func DefaultCacheDir() string {
	if d := os.Getenv("BROKERBENCH_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "brokerbench")
	}
	return filepath.Join(os.TempDir(), "brokerbench-cache")
}

// DefaultStateDir returns where running brokers keep data, logs and PID
// files: $BROKERBENCH_STATE, else the user cache directory's
// "brokerbench/state".
func DefaultStateDir() string {
	if d := os.Getenv("BROKERBENCH_STATE"); d != "" {
		return d
	}
	return filepath.Join(DefaultCacheDir(), "state")
}

// ErrPortInUse is returned when a broker's port is taken by a process
// brokerbench did not start.
var ErrPortInUse = errors.New("in use by a process brokerbench did not start")

// alive reports whether pid is a live (not zombie) process whose command
// line contains marker. The marker guards against a reused PID. A process
// whose command line reads empty (just started, or exiting) counts as
// alive: a node checked right after its start is not taken for dead.
func alive(pid int, marker string) bool {
	return proc.Live(pid) && (proc.CommandLineHas(pid, marker) || proc.Unnamed(pid))
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("PID file %s is corrupt: %w", path, err)
	}
	return pid, nil
}

// stopPID sends SIGTERM to pid, waits up to grace for it to exit, then sends
// SIGKILL and waits again.
func stopPID(pid int, marker string, grace time.Duration) error {
	if !alive(pid, marker) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop PID %d: %w", pid, err)
	}
	if waitGone(pid, marker, grace) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if waitGone(pid, marker, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("PID %d did not exit after SIGKILL", pid)
}

// waitGone waits up to d until pid has exited, and reports whether it did.
// A process in the middle of exiting has already released its command
// line but is not gone yet (its ports, files and children may still be
// held), so it is waited for; a live process with another command line is
// a reused PID, and the one waited for is gone.
func waitGone(pid int, marker string, d time.Duration) bool {
	gone := func() bool {
		if !proc.Live(pid) {
			return true
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && len(cmdline) > 0 && !proc.CommandLineHas(pid, marker)
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if gone() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return gone()
}

// tail returns the last n lines of the file at path, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
