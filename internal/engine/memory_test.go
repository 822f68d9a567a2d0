package engine

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/results"
)

// runOnMemory runs a workload of the given rate on the memory driver with
// commonConfig costs, and returns its outcome, output and results. It
// checks what holds whatever the verdict: the run connected to the broker
// in this process and started no local cluster, and its accounting is
// exact.
func runOnMemory(t *testing.T, rate int, costs string) (string, *results.Run, error) {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("BROKERBENCH_STATE", state)
	wl := filepath.Join(dir, "memory.yaml")
	text := "name: memory\ntopics: 1\npartitionsPerTopic: 3\nmessageSize: 100\nproducersPerTopic: 2\nsubscriptionsPerTopic: 2\n" +
		"rate: " + strconv.Itoa(rate) + "\nwarmup: 1s\nduration: 2s\ndriver:\n  driver: memory\n  commonConfig: {" + costs + "}\n"
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	o := DefaultRunOptions()
	o.Out, o.Progress, o.MaxSendLag = out, false, 200*time.Millisecond
	var stdout, stderr strings.Builder
	runErr := Run(context.Background(), IO{Out: &stdout, Err: &stderr}, wl, o)
	if !completed(t, runErr) {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", runErr, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "connecting to memory at this process") || strings.Contains(stderr.String(), "using local") {
		t.Errorf("the run did not go to the broker in this process alone:\n%s", stderr.String())
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the run made local cluster state in %s (%v)", state, err)
	}
	if _, err := os.Stat(results.JournalPath(out)); !os.IsNotExist(err) {
		t.Errorf("the journal is still there once the results are written (%v)", err)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.Sent == 0 || c.Acked != c.Sent || c.Failed != 0 || c.Unacked != 0 || c.Lost != 0 || c.UnconfirmedLoss != 0 || c.Undelivered != 0 ||
		c.Duplicated != 0 || c.OutOfOrder != 0 || c.Unexpected != 0 || c.StoredByBroker == nil || *c.StoredByBroker != c.Acked || c.Consumed != 2*c.Acked {
		t.Errorf("accounting is not exact: %+v", c)
	}
	for _, s := range c.Subscriptions {
		if s.Expected != c.Acked || s.Delivered != s.Expected {
			t.Errorf("subscription %s: %+v, want all %d acknowledged messages delivered", s.Name, s, c.Acked)
		}
	}
	if len(c.Subscriptions) != 2 || res.Driver.Name != "memory" {
		t.Errorf("driver %q, subscriptions %+v", res.Driver.Name, c.Subscriptions)
	}
	return stdout.String(), res, runErr
}

// TestRunOnMemory runs 'run' end to end on the memory driver, with no
// broker process and no JVM: the delay the config gives is in every
// latency (a message crosses it twice before its acknowledgement, and
// twice before its delivery), and the ceiling caps the rate, a verdict
// the run must give rather than exit 0.
func TestRunOnMemory(t *testing.T) {
	t.Run("delay", func(t *testing.T) {
		_, res, _ := runOnMemory(t, 1000, `delay.ms: "3"`)
		m := res.Measured
		if m.PublishLatency.P50 < 6 || m.EndToEndLatency.P50 < 6 || m.ServiceTime.P50 < 6 {
			t.Errorf("p50 publish %.2f ms, end-to-end %.2f ms, service time %.2f ms: want at least twice the 3 ms delay",
				m.PublishLatency.P50, m.EndToEndLatency.P50, m.ServiceTime.P50)
		}
		if v, _ := res.Driver.Effective["common"].Get("delay.ms"); v != "3" {
			t.Errorf("effective delay.ms %q, want 3", v)
		}
	})
	t.Run("ceiling", func(t *testing.T) {
		// What the ceiling holds back is stored after the measurement,
		// at the ceiling's pace: a small excess keeps the drain short.
		stdout, res, err := runOnMemory(t, 1000, `ceiling.per.second: "700"`)
		if err == nil || res.Target == nil || res.Target.Held {
			t.Errorf("%v, target %+v: a ceiling of 700 msg/s under a target of 1000 must not be held\n%s", err, res.Target, stdout)
		}
		if r := res.Measured.PublishRate; r > 770 {
			t.Errorf("published %.0f msg/s through a ceiling of 700", r)
		}
	})
}

// completed reports whether err is the outcome of a run that completed:
// nil, or a verdict about its rate that a busy machine may give (a target
// not held, the load generator the bottleneck, other processes taking the
// CPU), which it logs.
func completed(t *testing.T, err error) bool {
	t.Helper()
	switch KindOf(err) {
	case TargetNotHeld, LoadGeneratorBound, Disturbed:
		t.Logf("%v: a verdict on the rate this machine held, accepted here", err)
		return true
	}
	return err == nil
}
