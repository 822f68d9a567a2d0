package leftovers

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestDeadRunsAreFound: an entry whose process exited is dead; the live
// run's own entry is not; deleting the last topic removes an entry.
func TestDeadRunsAreFound(t *testing.T) {
	reg := Open(t.TempDir())
	live := reg.Track(Entry{RunID: "live", StartedAt: time.Now(), Driver: "kafka", Target: "127.0.0.1:1"})
	live.CreatingTopic("a")
	live.CreatingTopic("b")

	// A run of another process that has exited.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	gone := Entry{RunID: "gone", PID: cmd.Process.Pid, Exe: exe, StartedAt: time.Now().Add(-time.Hour), Driver: "kafka", Target: "127.0.0.1:1", Topics: []string{"x"}}
	if err := reg.write(gone); err != nil {
		t.Fatal(err)
	}
	// A live process of another program (PID reuse) is not the run.
	reused := Entry{RunID: "reused", PID: os.Getpid(), Exe: "/not/brokerbench", Topics: []string{"y"}}
	if err := reg.write(reused); err != nil {
		t.Fatal(err)
	}
	dead, err := reg.Dead()
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 || dead[0].RunID != "reused" && dead[1].RunID != "reused" {
		t.Fatalf("dead %+v, want gone and reused", dead)
	}
	if err := reg.Update(gone, nil); err != nil {
		t.Fatal(err)
	}
	live.DeletedTopic("a")
	live.DeletedTopic("b")
	if err := live.Err(); err != nil {
		t.Fatal(err)
	}
	if dead, _ := reg.Dead(); len(dead) != 1 || dead[0].RunID != "reused" {
		t.Fatalf("after cleaning: %+v", dead)
	}
	if _, err := os.Stat(reg.path("live")); !os.IsNotExist(err) {
		t.Errorf("the live run's entry remains with no topic left: %v", err)
	}
}
