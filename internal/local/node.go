package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/internal/proc"
)

// Node is one broker process of a local cluster: its id and roles, its own
// loopback address and ports, and its directory, which holds its config,
// data, log and PID file. The same Node serves every broker kind; what the
// process is comes from the cluster's Kind.
type Node struct {
	ID    int      `json:"id"`
	Roles []string `json:"roles"`
	// Host is the node's own loopback address (127.0.0.0/8 is all local),
	// so that a link between two nodes is a pair of addresses.
	Host string `json:"host"`
	// Ports maps each of the node's listeners to its port on Host.
	Ports map[string]int `json:"ports"`
	// EveryAddress names the listeners the node's process binds on every
	// address rather than on Host (the software has no setting for it):
	// their ports are chosen free on every address and apart from every
	// other port of the cluster.
	EveryAddress []string `json:"everyAddress,omitempty"`
	Dir          string   `json:"dir"`
	// exit is what became of the process this process last started for
	// the node; nil if it started none.
	exit *exited
}

// exited is how a node's process that this process started ended, once
// it has: its reaper records it.
type exited struct {
	pid   int
	mu    sync.Mutex
	state *os.ProcessState
}

// exitReason says how the node's process pid ended, if this process
// started it and saw it end: "was ended by signal 9 (killed)", "exited
// with status 1"; else "is no longer running".
func (n *Node) exitReason(pid int) string {
	if n.exit == nil || n.exit.pid != pid {
		return "is no longer running"
	}
	n.exit.mu.Lock()
	ps := n.exit.state
	n.exit.mu.Unlock()
	if ps == nil {
		return "is no longer running"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was ended by signal %d (%v) from outside", int(ws.Signal()), ws.Signal())
	}
	if code := ps.ExitCode(); code > 128 && code < 128+65 {
		sig := syscall.Signal(code - 128)
		return fmt.Sprintf("exited with status %d, as it does when sent signal %d (%v) from outside", code, int(sig), sig)
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

// Addr returns host:port of the node's listener.
func (n *Node) Addr(listener string) string {
	return fmt.Sprintf("%s:%d", n.Host, n.Ports[listener])
}

// HasRole reports whether the node has role.
func (n *Node) HasRole(role string) bool {
	for _, r := range n.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// ConfigFile is the node's config file; its path is on the process's
// command line and identifies the process (see PID).
func (n *Node) ConfigFile(name string) string { return filepath.Join(n.Dir, name) }

// LogFile is where the node's process writes its output.
func (n *Node) LogFile() string { return filepath.Join(n.Dir, "node.log") }

func (n *Node) pidFile() string { return filepath.Join(n.Dir, "node.pid") }

// Marker identifies the node's process among others with the same PID
// history: the node's directory is on its command line.
func (n *Node) Marker() string { return n.Dir + string(filepath.Separator) }

// PID returns the node's process id and whether that process is running
// (and is the node's, not a reused PID).
func (n *Node) PID() (int, bool) {
	pid, err := readPID(n.pidFile())
	if err != nil {
		return 0, false
	}
	return pid, alive(pid, n.Marker())
}

// envMarker is the environment entry every process of the node carries:
// its own, and every daemon it forks (see stopForked).
func (n *Node) envMarker() string { return "BROKERBENCH_NODE=" + n.Dir }

// start launches argv as the node's process in its own session, so that
// it outlives the command that started it and ignores the terminal's
// Ctrl-C, with its output appended to the node's log. The process gets
// this process's environment, then env, then the node's marker.
func (n *Node) start(argv, env []string) (int, error) {
	logf, err := os.OpenFile(n.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open node %d log: %w", n.ID, err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(os.Environ(), env...), n.envMarker())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start node %d: %w", n.ID, err)
	}
	pid := cmd.Process.Pid
	// Reap the process if it exits while this process still runs, so that
	// it does not linger as a zombie, and keep how it ended.
	ex := &exited{pid: pid}
	n.exit = ex
	go func() {
		_ = cmd.Wait()
		ex.mu.Lock()
		ex.state = cmd.ProcessState
		ex.mu.Unlock()
	}()
	if err := os.WriteFile(n.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return pid, fmt.Errorf("write node %d PID file: %w", n.ID, err)
	}
	return pid, nil
}

// Stop stops the node's process (SIGTERM, then SIGKILL after grace). It is
// a no-op if the node is not running.
func (n *Node) Stop(grace time.Duration) error {
	pid, err := readPID(n.pidFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := stopPID(pid, n.Marker(), grace); err != nil {
		return fmt.Errorf("node %d: %w", n.ID, err)
	}
	return os.Remove(n.pidFile())
}

// stopForked stops the processes the node's process forked and left
// running, known by the node's environment marker (RabbitMQ's Erlang
// starts an epmd daemon that outlives it), and returns their PIDs. Call
// it once the node's process has stopped.
func (n *Node) stopForked(grace time.Duration) ([]int, error) {
	pids := proc.WithEnv(n.envMarker())
	var errs []error
	for _, pid := range pids {
		errs = append(errs, stopPID(pid, "", grace))
	}
	return pids, errors.Join(errs...)
}

// Kill ends the node's process at once (SIGKILL), as a crash would, and
// waits until it is gone.
func (n *Node) Kill() error {
	pid, ok := n.PID()
	if !ok {
		return fmt.Errorf("node %d is not running", n.ID)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill node %d (pid %d): %w", n.ID, pid, err)
	}
	if !waitGone(pid, n.Marker(), 10*time.Second) {
		return fmt.Errorf("node %d (pid %d) did not exit after SIGKILL", n.ID, pid)
	}
	return nil
}

// Pause stops the node's process (SIGSTOP), as a long GC pause or a hung
// machine would; Resume continues it.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP) }

// Resume continues a paused node (SIGCONT).
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig syscall.Signal) error {
	pid, ok := n.PID()
	if !ok {
		return fmt.Errorf("node %d is not running", n.ID)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal node %d (pid %d): %w", n.ID, pid, err)
	}
	return nil
}
