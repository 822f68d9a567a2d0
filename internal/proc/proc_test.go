package proc

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLive: this process is live and runs its executable; a child that
// exited is not live, before it is reaped (a zombie) and after.
func TestLive(t *testing.T) {
	if !Live(os.Getpid()) || !CommandLineHas(os.Getpid(), os.Args[0]) {
		t.Fatal("this process is not live, or its command line is not its own")
	}
	if exe, _ := os.Executable(); func() string { e, _ := Executable(os.Getpid()); return e }() != exe {
		t.Error("Executable does not name this test binary")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	// Exited, not reaped: a zombie, once the busiest machine ran it.
	for deadline := time.Now().Add(30 * time.Second); !zombie(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !zombie(pid) {
		t.Fatalf("pid %d did not become a zombie", pid)
	}
	if Live(pid) {
		t.Errorf("a zombie (pid %d) counts as live", pid)
	}
	_ = cmd.Wait()
	if Live(pid) || Live(0) || Live(-1) {
		t.Error("a reaped or invalid PID counts as live")
	}
}

// TestUnnamed: this test process has a command line, so it is not
// unnamed; neither is a PID that does not exist.
func TestUnnamed(t *testing.T) {
	if Unnamed(os.Getpid()) {
		t.Error("this process, with its command line, is unnamed")
	}
	if Unnamed(1 << 30) {
		t.Error("a PID that does not exist is unnamed")
	}
}

// TestWithEnv: a daemon forked by a child (the shell's background job,
// reparented when the shell exits) is found by the entry the child was
// started with, and only by the exact entry.
func TestWithEnv(t *testing.T) {
	mark := "BROKERBENCH_PROC_TEST=" + t.Name() + time.Now().Format("150405.000000")
	cmd := exec.Command("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!")
	cmd.Env = append(os.Environ(), mark)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var daemon int
	if _, err := fmt.Sscan(string(out), &daemon); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(daemon, syscall.SIGKILL)
	// Right after exec a process's environment reads empty for a moment
	// (as its command line does, see Unnamed): allow the daemon 2 s.
	var got []int
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = WithEnv(mark); len(got) > 0 {
			break
		}
	}
	if !slices.Equal(got, []int{daemon}) {
		t.Errorf("WithEnv(%q) = %v, want [%d]", mark, got, daemon)
	}
	if got := WithEnv(mark[:len(mark)-1]); len(got) != 0 {
		t.Errorf("a prefix of the entry found %v", got)
	}
}

// TestStartTime: a process has a start time, the same each time it is
// read; a child started later has a later or equal one; no process has
// none.
func TestStartTime(t *testing.T) {
	self := StartTime(os.Getpid())
	if self == 0 || StartTime(os.Getpid()) != self {
		t.Fatalf("this process's start time reads %d, then %d", self, StartTime(os.Getpid()))
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if child := StartTime(cmd.Process.Pid); child < self {
		t.Errorf("child's start time %d before this process's %d", child, self)
	}
	if StartTime(1<<30) != 0 {
		t.Error("a PID that does not exist has a start time")
	}
}

// zombie reports whether the kernel shows pid as a zombie (state Z).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
