package local

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStoppedSinceNamesTheNodesThatStopped: of a cluster's nodes running
// at one moment, StoppedSince names those killed since, and how, and
// those started again, and not the others.
func TestStoppedSinceNamesTheNodesThatStopped(t *testing.T) {
	c := fakeCluster(t.TempDir(), 3, StartedByUser)
	if _, err := c.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Down()
	before := c.RunningPIDs()
	if len(before) != 3 {
		t.Fatalf("running PIDs %v, want 3", before)
	}
	if got := c.StoppedSince(before); len(got) != 0 {
		t.Fatalf("nothing stopped, StoppedSince says %q", got)
	}
	if err := syscall.Kill(before[2], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Node(2).exitReason(before[2]) == "is no longer running" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := c.StoppedSince(before)
	if len(got) != 1 || !strings.HasPrefix(got[0], "fake node 2 (") || !strings.Contains(got[0], "was ended by signal 9 (killed) from outside") {
		t.Fatalf("after node 2 was killed, StoppedSince says %q", got)
	}
	if err := c.Restart(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	got = c.StoppedSince(before)
	if len(got) != 1 || !strings.Contains(got[0], "fake node 2") || !strings.Contains(got[0], "was started again") {
		t.Fatalf("after node 2 was started again, StoppedSince says %q", got)
	}
	if got := c.StoppedSince(c.RunningPIDs()); len(got) != 0 {
		t.Errorf("measured from now, StoppedSince says %q", got)
	}
}
