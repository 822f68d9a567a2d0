package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/output"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// finish hands res to a run's own outputs, as a session does once the
// run ended, and returns its verdict.
func finish(t *testing.T, io IO, res *results.Run, out string) error {
	t.Helper()
	outs := output.NewManager(io.Err, runOutputs(io, out, "")...)
	if err := outs.Start(res); err != nil {
		t.Fatal(err)
	}
	return verdict(res, nil, outs.Stop(res))
}

// TestRunOutputsAndVerdicts: the outcome's kind is the verdict of the
// results, and results that cannot be written where asked are saved
// elsewhere, with the summary printed all the same.
func TestRunOutputsAndVerdicts(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	w := &workload.Workload{Name: "w", MessageSize: 100, Topics: 1, PartitionsPerTopic: 1, ProducersPerTopic: 1}
	run := func(c results.Counts) *results.Run {
		return &results.Run{Schema: results.Schema, ID: "x", Workload: w, Counts: c,
			Measured: results.Aggregate{Traffic: results.Traffic{PublishLatency: metrics.Latency{Count: c.Acked}}}}
	}
	cases := []struct {
		name   string
		res    *results.Run
		kind   Kind
		stdout string
	}{
		{"ok", run(results.Counts{Sent: 10, Acked: 10, Consumed: 10}), 0, "complete"},
		{"all failed", run(results.Counts{Sent: 4, Failed: 4, FailedByKind: map[string]int64{"MESSAGE_TOO_LARGE": 4}}), RunFailed, "RUN FAILED"},
		{"lost", run(results.Counts{Sent: 10, Acked: 10, Consumed: 8, Lost: 2}), AccountingMismatch, "lost 2"},
		// A loss the broker could not be read again for: exit 5 too, and
		// the summary says it is unconfirmed.
		{"unconfirmed loss", run(results.Counts{Sent: 10, Acked: 10, Consumed: 9, UnconfirmedLoss: 1, Subscriptions: []results.SubscriptionCounts{
			{Name: "s", Expected: 10, Delivered: 9, UnconfirmedLoss: 1, Reread: &results.Reread{Missing: 1, Error: "the driver cannot read the broker again"}}}}),
			AccountingMismatch, "UNCONFIRMED LOSS 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := finish(t, IO{Out: &out, Err: &errOut}, tc.res, filepath.Join(dir, tc.name+".json"))
			if kind := KindOf(err); kind != tc.kind || !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("kind %d (want %d): %v\n%s", kind, tc.kind, err, out.String())
			}
		})
	}
	// The requested path cannot be written: the summary is still printed,
	// the results go to a fallback the message names, and the exit is 1.
	notDir := filepath.Join(dir, "file")
	_ = os.WriteFile(notDir, nil, 0o644)
	var out bytes.Buffer
	err := finish(t, IO{Out: &out, Err: &out}, run(results.Counts{Sent: 10, Acked: 10, Consumed: 10}), filepath.Join(notDir, "r.json"))
	fallback := filepath.Join(dir, "brokerbench-r.json")
	if KindOf(err) != RunFailed || !strings.Contains(out.String(), "accounting:") || !strings.Contains(out.String(), fallback) {
		t.Errorf("kind %d: %v\n%s", KindOf(err), err, out.String())
	}
	if _, err := results.Read(fallback); err != nil {
		t.Errorf("fallback not written: %v", err)
	}
}
