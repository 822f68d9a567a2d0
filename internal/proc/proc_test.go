package proc

import (
	"os"
	"os/exec"
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
	time.Sleep(200 * time.Millisecond) // exited, not reaped: a zombie
	if Live(pid) {
		t.Errorf("a zombie (pid %d) counts as live", pid)
	}
	_ = cmd.Wait()
	if Live(pid) || Live(0) || Live(-1) {
		t.Error("a reaped or invalid PID counts as live")
	}
}
