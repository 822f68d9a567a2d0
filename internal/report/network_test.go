package report

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestNetworkTable: each configuration on delayed links is compared with
// the same configuration on undelayed proxied links (preferred over
// unproxied ones), and its added latency checked against the bounds its
// producer settings give.
func TestNetworkTable(t *testing.T) {
	withNetwork := func(setup string, p50 float64, nw *workload.Network, acks string) *results.Run {
		r := fixtureRun(setup, 1024, 1, 1000, 5)
		r.Measured.PublishLatency.P50, r.Measured.EndToEndLatency.P50 = p50, p50+1
		r.Environment.Network = nw
		r.Driver.ReplicationFactor = 3
		r.Driver.Effective = map[string]workload.Properties{"producer": {{Key: "acks", Value: acks}}}
		return r
	}
	stretch := &workload.Network{Zones: 3, Delay: 20 * time.Millisecond, Jitter: 4 * time.Millisecond}
	group := func(r *results.Run) *Group { return &Group{Label: r.Study.Setup, Runs: []*results.Run{r}} }
	in := &Input{Groups: []*Group{
		group(withNetwork("direct", 3, nil, "all")),
		group(withNetwork("proxied", 5, &workload.Network{Zones: 1}, "all")),
		group(withNetwork("fits", 5+150, stretch, "all")),      // 40 to 240 ms
		group(withNetwork("too-little", 5+20, stretch, "all")), // below 2d
		group(withNetwork("too-much", 5+400, stretch, "all")),  // beyond 12d
		group(withNetwork("acks1", 5+30, stretch, "1")),        // 0 to 40 ms: no replication wait
		group(withNetwork("acks1-slow", 5+60, stretch, "1")),   // beyond 2d
	}}
	nt := in.NetworkTable()
	if nt == nil || len(nt.Rows) != 5 {
		t.Fatalf("table %+v: want a row per delayed configuration", nt)
	}
	want := []struct{ setup, bounds, added, check string }{
		{"fits", "40 to 240", "150.0", "as the links explain"},
		{"too-little", "40 to 240", "20.0", "LESS"},
		{"too-much", "40 to 240", "400.0", "MORE"},
		{"acks1", "0 to 40", "30.0", "as the links explain"},
		{"acks1-slow", "0 to 40", "60.0", "MORE"},
	}
	for i, w := range want {
		row := nt.Rows[i]
		if row[0] != w.setup || row[2] != "proxied" || row[3] != w.bounds || row[4] != w.added || !strings.HasPrefix(row[6], w.check) {
			t.Errorf("row %d = %q; want %s against proxied, bounds %s, added %s, %s", i, row, w.setup, w.bounds, w.added, w.check)
		}
	}
	// Without an undelayed proxied run, the unproxied one is the baseline.
	in.Groups = append(in.Groups[:1], in.Groups[2:]...)
	if nt := in.NetworkTable(); nt == nil || nt.Rows[0][2] != "direct" || nt.Rows[0][4] != "152.0" {
		t.Errorf("without a proxied baseline: %q", nt.Rows[0])
	}
}
