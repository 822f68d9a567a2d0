package report

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/results"
)

// TestWorkerTable: a distributed run has a row per worker, with its share,
// clock and what it measured; a lost worker says so; runs in one process
// have none.
func TestWorkerTable(t *testing.T) {
	single := fixtureRun("one-process", 100, 1, 1000, 5)
	spread := fixtureRun("two-workers", 100, 1, 1000, 5)
	spread.Distributed = &results.Distribution{Placement: "spread", StartSpreadMs: 0.8, Workers: []results.Worker{
		{Address: "http://127.1.0.1:7070", Producers: 1, Consumers: 0, ClockOffsetMs: 0.012, ClockErrorMs: 0.03, StartLateMs: 0.4,
			Measured: results.Traffic{PublishRate: 500}, System: &results.System{ClientCPU: 12}},
		{Address: "http://127.1.1.1:7070", Producers: 0, Consumers: 1, Error: "lost after 3.0 s"},
	}}
	in := &Input{Groups: []*Group{{Label: "a", Runs: []*results.Run{single}}, {Label: "b", Runs: []*results.Run{spread}}}}
	wt := in.WorkerTable()
	if wt == nil || len(wt.Rows) != 2 || len(wt.CSV) != 2 {
		t.Fatalf("table %+v: want a row per worker of the distributed run", wt)
	}
	first, lost := wt.Rows[0], wt.Rows[1]
	if first[1] != "http://127.1.0.1:7070" || first[2] != "1" || first[4] != "0.012" || first[7] != "0.800" || first[8] != "500" || first[11] != "12" {
		t.Errorf("first worker %q", first)
	}
	if lost[12] != "lost after 3.0 s" || lost[11] != "–" {
		t.Errorf("lost worker %q", lost)
	}
	in.Groups = in.Groups[:1]
	if in.WorkerTable() != nil {
		t.Error("a table without distributed runs")
	}
}
