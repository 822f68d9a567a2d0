package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// journalOf writes a journal of three intervals (warmup, two measured) and
// two topics, one deleted, and returns its path.
func journalOf(t testing.TB) string {
	t.Helper()
	path := JournalPath(filepath.Join(t.TempDir(), "r.json"))
	j, err := CreateJournal(path, &Run{ID: "id1", Workload: &workload.Workload{Name: "w", MessageSize: 100}, Intervals: []Interval{{}}})
	if err != nil {
		t.Fatal(err)
	}
	j.CreatingTopic("t1")
	j.CreatingTopic("t2")
	j.DeletedTopic("t1")
	for i, phase := range []Phase{Warmup, Measure, Measure} {
		c := metrics.NewCounts()
		for v := range int64(10) {
			c.Record(1000 * (v + 1) * int64(i+1))
		}
		enc, err := metrics.Encode(c.Histogram())
		if err != nil {
			t.Fatal(err)
		}
		iv := Interval{StartSeconds: float64(i), EndSeconds: float64(i + 1), Phase: phase, Traffic: Traffic{Sent: 10, Acked: 10, Consumed: 10}}
		j.Interval(iv, Histograms{PublishLatency: enc})
	}
	if err := j.Err(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestJournalRebuildsAPartialRun(t *testing.T) {
	path := journalOf(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of a write leaves a last line cut short.
	data = append(data, []byte(`{"interval":{"start":3,`)...)
	run, live, err := ReadJournal(path, data)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Measured
	if !run.Partial || run.ID != "id1" || len(run.Intervals) != 3 || m.DurationSeconds != 2 || m.Acked != 20 || run.Counts.Acked != 30 ||
		m.PublishRate != 10 || m.PublishLatency.Count != 20 || m.PublishLatency.Max < 19.9 {
		t.Fatalf("rebuilt %+v\nmeasured %+v counts %+v", run, m, run.Counts)
	}
	if len(live) != 1 || live[0] != "t2" {
		t.Errorf("live topics %v, want [t2]", live)
	}
	if got, err := Read(path); err != nil || got.Measured.Acked != 20 {
		t.Errorf("Read of a journal: %v, %+v", err, got)
	}
}

func TestJournalCloseRemoves(t *testing.T) {
	path := JournalPath(filepath.Join(t.TempDir(), "r.json"))
	j, err := CreateJournal(path, &Run{ID: "x", Workload: &workload.Workload{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(true); err != nil {
		t.Fatal(err)
	}
	j.Interval(Interval{}, Histograms{}) // after Close: dropped, no panic
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("journal still there after Close(true): %v", err)
	}
}

func TestJournalRejects(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"empty":        {"", "empty journal"},
		"no head":      {`{"creatingTopic":"t"}` + "\n", ":1: journal without a head line first"},
		"results file": {`{"schema":"brokerbench/results/v1","workload":{}}` + "\n", ":1: journal without a head line first"},
		"second head":  {`{"head":{"schema":"brokerbench/journal/v1","workload":{}}}` + "\n" + `{"head":{"schema":"brokerbench/journal/v1","workload":{}}}` + "\n", ":2: a second head"},
		"garbage line": {`{"head":{"schema":"brokerbench/journal/v1","workload":{}}}` + "\nnot json\n{}\n", ":2: not a journal line"},
		"other schema": {`{"head":{"schema":"x","workload":{}}}` + "\n", `:1: not a brokerbench journal (schema "x"`},
	} {
		if _, _, err := ReadJournal("j", []byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
}

func FuzzReadJournal(f *testing.F) {
	data, _ := os.ReadFile(journalOf(f))
	f.Add(data)
	f.Add([]byte(`{"head":{"schema":"brokerbench/journal/v1","workload":{"messageSize":-1}}}` + "\n" + `{"interval":{"start":0,"end":-1,"phase":"measure"},"histograms":{"publishLatency":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		run, _, err := ReadJournal("fuzz", data)
		if err == nil && (run == nil || run.Workload == nil || !run.Partial) {
			t.Fatalf("accepted a journal without a run: %+v", run)
		}
	})
}
