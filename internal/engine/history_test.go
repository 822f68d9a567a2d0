package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestRunIsRecorded makes a run with a history: its record names its
// results file, labels and settings.
func TestRunIsRecorded(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	wl := filepath.Join(dir, "memory.yaml")
	text := "name: memory\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 100\nproducersPerTopic: 1\nsubscriptionsPerTopic: 1\n" +
		"rate: 500\nwarmup: 1s\nduration: 1s\ndriver:\n  driver: memory\n  commonConfig: {delay.ms: \"1\"}\n"
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultRunOptions()
	o.Out, o.Progress, o.MaxSendLag = filepath.Join(dir, "r.json"), false, 200*time.Millisecond
	o.History = history.Recording{Path: filepath.Join(dir, "history.jsonl"), Labels: map[string]string{"ci": "yes"}}
	var stdout, stderr strings.Builder
	if err := Run(context.Background(), IO{Out: &stdout, Err: &stderr}, wl, o); !completed(t, err) {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	c, err := history.Open(o.History.Path).Records()
	if err != nil || len(c.Records) != 1 {
		t.Fatalf("history: %+v, %v\n%s", c, err, stderr.String())
	}
	r := c.Records[0]
	res, err := results.Read(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != res.ID || r.File != o.Out || r.Labels["ci"] != "yes" || r.Settings["common/delay.ms"] != "1" || r.Broker != "memory" || r.Figures["publishRate"] == 0 {
		t.Errorf("record %+v", r)
	}
}

// TestHistoryFailureIsAWarning: a history that cannot be written is said,
// and nothing else.
func TestHistoryFailureIsAWarning(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	res := &results.Run{ID: "x", Workload: &workload.Workload{Name: "w"}}
	recordHistory(&w, history.Recording{Path: filepath.Join(blocker, "history.jsonl")}, history.Stored{Run: res, Path: "r.json"})
	if !strings.Contains(w.String(), "warning: not recorded in the history") {
		t.Errorf("said %q", w.String())
	}
}

// TestStudyRunsAreRecorded: a study's complete runs are recorded as they
// are written, a partial one not.
func TestStudyRunsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	rc := history.Recording{Path: filepath.Join(dir, "history.jsonl")}
	var w strings.Builder
	stored := studyRecorder(&w, rc)
	for _, id := range []string{"a", "b"} {
		res := &results.Run{Schema: results.Schema, ID: id, Workload: &workload.Workload{Name: "w"}, Study: &results.StudyRun{Name: "s", Key: id, Brokers: 3}}
		res.Partial = id == "b"
		stored(res, filepath.Join(dir, "runs", id+".json"))
	}
	c, err := history.Open(rc.Path).Records()
	if err != nil || len(c.Records) != 1 || w.Len() != 0 {
		t.Fatalf("history %+v, %v; said %q", c, err, w.String())
	}
	if r := c.Records[0]; r.ID != "a" || r.Study != "s/a" || r.Env.Nodes != 3 {
		t.Errorf("record %+v", r)
	}
}

// TestKubeRunIsRecorded: the results a run on Kubernetes copied here are
// recorded as a run's are; partial ones (an interrupted run) are not.
func TestKubeRunIsRecorded(t *testing.T) {
	dir := t.TempDir()
	rc := history.Recording{Path: filepath.Join(dir, "history.jsonl"), Labels: map[string]string{"where": "k8s"}}
	whole, partial := filepath.Join(dir, "whole.json"), filepath.Join(dir, "partial.json")
	for _, f := range []struct {
		path    string
		partial bool
	}{{whole, false}, {partial, true}} {
		res := &results.Run{Schema: results.Schema, ID: filepath.Base(f.path), Partial: f.partial, Workload: &workload.Workload{Name: "w"}}
		if err := results.Write(f.path, res); err != nil {
			t.Fatal(err)
		}
	}
	var w strings.Builder
	recordKubeRun(IO{Out: &w, Err: &w}, rc, whole)
	recordKubeRun(IO{Out: &w, Err: &w}, rc, partial)
	recordKubeRun(IO{Out: &w, Err: &w}, rc, filepath.Join(dir, "missing.json"))
	c, err := history.Open(rc.Path).Records()
	if err != nil || len(c.Records) != 1 || c.Records[0].ID != "whole.json" || c.Records[0].Labels["where"] != "k8s" {
		t.Fatalf("history: %+v, %v\n%s", c, err, w.String())
	}
	if !strings.Contains(w.String(), "warning: not recorded in the history") {
		t.Errorf("a results file that cannot be read is not said: %q", w.String())
	}
}
