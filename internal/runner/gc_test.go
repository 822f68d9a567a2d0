package runner

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent returns the collector's target, leaving it as it was.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestRaiseGCTarget: runs raise the target to runGCPercent and the last one
// to end restores what was there; a higher target or GC off stays; a GOGC
// of the user's own is left alone.
func TestRaiseGCTarget(t *testing.T) {
	if gcPercent() != 100 {
		t.Skip("the test binary runs with a GOGC of its own")
	}
	t.Setenv("GOGC", "") // restored after the test
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	first := raiseGCTarget()
	second := raiseGCTarget()
	if got := gcPercent(); got != runGCPercent {
		t.Fatalf("during two runs: GC percent %d, want %d", got, runGCPercent)
	}
	first()
	if got := gcPercent(); got != runGCPercent {
		t.Fatalf("after one of two runs ended: GC percent %d, want %d", got, runGCPercent)
	}
	second()
	if got := gcPercent(); got != 100 {
		t.Fatalf("after both ended: GC percent %d, want 100 restored", got)
	}

	for _, before := range []int{400, -1} {
		debug.SetGCPercent(before)
		restore := raiseGCTarget()
		if got := gcPercent(); got != before {
			t.Errorf("target %d before the run: %d during it, want it kept", before, got)
		}
		restore()
		debug.SetGCPercent(100)
	}

	t.Setenv("GOGC", "100")
	restore := raiseGCTarget()
	if got := gcPercent(); got != 100 {
		t.Errorf("with GOGC set by the user: GC percent %d during a run, want 100", got)
	}
	restore()
}
