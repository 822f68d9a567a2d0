package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// linkBounds is the publish latency that delayed links must add to a
// message, at least and at most, for one-way delay d between zones; the
// clients sit in zone 1.
//
// One produce request: with acks=all on a replicated topic the leader
// answers once its followers, in other zones, have fetched the message
// and asked for the next one: 2d if a follower's fetch was waiting at the
// leader, up to 4d if it was on its way back. A leader outside the
// clients' zone adds the request's own round trip, 2d: 2d to 6d in all.
// Without acks=all only that round trip counts: 0 to 2d.
//
// A message may also wait for the request ahead of it to the same broker:
// an idempotent producer keeps one produce request in flight per broker
// (franz-go allows no more), so the most is twice one request's.
// End-to-end latency gains the same: the consumer, in zone 1, reads from
// the same leaders.
func linkBounds(r *results.Run, d time.Duration) (lo, hi float64) {
	ms := float64(d) / 1e6
	producer := r.Driver.Effective["producer"].Map()
	acks := producer["acks"].Value
	all := acks == "all" || acks == "-1"
	idempotent := producer["enable.idempotence"].Value == "true" || (producer["enable.idempotence"].Value == "" && all)
	lo, hi = 0, 2*ms
	if all && r.Driver.ReplicationFactor > 1 {
		lo, hi = 2*ms, 6*ms
	}
	if idempotent {
		hi *= 2
	}
	return lo, hi
}

// baselineFor returns the group measuring g's configuration without link
// delay: same workload, brokers and parameters, its links proxied but not
// delayed if such a group exists, else not proxied at all.
func (in *Input) baselineFor(g *Group) *Group {
	want := g.first()
	var direct *Group
	for _, b := range in.Groups {
		r := b.first()
		if b == g || r.Study == nil || want.Study == nil || r.Study.Workload != want.Study.Workload ||
			r.Study.Brokers != want.Study.Brokers || !slices.Equal(r.Study.Params, want.Study.Params) {
			continue
		}
		switch nw := r.Environment.Network; {
		case nw != nil && nw.Delay == 0:
			return b
		case nw == nil && direct == nil:
			direct = b
		}
	}
	return direct
}

// medianOf is the median of f over g's finished runs.
func medianOf(g *Group, f func(*results.Run) float64) float64 {
	var v []float64
	for _, r := range g.Runs {
		if !r.Partial {
			v = append(v, f(r))
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	med, _, _ := spread(v)
	return med
}

// NetworkTable checks, for every configuration run over delayed links,
// the latency it added against its baseline (see baselineFor) and against
// what the links must add (linkBounds). Nil when no run had delayed links.
func (in *Input) NetworkTable() *Table {
	t := &Table{Title: "Delayed links: added latency, measured against what the links add",
		Headers:    []string{"Configuration", "Network", "Baseline", "Links must add (ms)", "Added publish p50 (ms)", "Added end-to-end p50 (ms)", "Check"},
		CSVHeaders: []string{"configuration", "network", "baseline", "expectedMinMs", "expectedMaxMs", "addedPublishP50Ms", "addedE2eP50Ms", "check"}}
	pub := func(r *results.Run) float64 { return r.Measured.PublishLatency.P50 }
	e2e := func(r *results.Run) float64 { return r.Measured.EndToEndLatency.P50 }
	for _, g := range in.Groups {
		nw := g.first().Environment.Network
		if nw == nil || nw.Delay == 0 {
			continue
		}
		lo, hi := linkBounds(g.first(), nw.Delay)
		row := []string{g.Label, nw.String(), "none measured", fmt.Sprintf("%s to %s", formatNum(lo, 0), formatNum(hi, 0)), "–", "–", "no baseline: add a setup with the same brokers and network: {zones: 1}"}
		csvRow := []string{g.Label, nw.String(), "", csvNum(lo), csvNum(hi), "", "", "no baseline"}
		if b := in.baselineFor(g); b != nil {
			addPub, addE2E := medianOf(g, pub)-medianOf(b, pub), medianOf(g, e2e)-medianOf(b, e2e)
			row[2], csvRow[2] = b.Label, b.Label
			row[4], row[5] = formatNum(addPub, 1), formatNum(addE2E, 1)
			csvRow[5], csvRow[6] = csvNum(addPub), csvNum(addE2E)
			row[6] = linkCheck(addPub, lo, hi, nw)
			csvRow[7] = row[6]
		}
		t.Rows = append(t.Rows, row)
		t.CSV = append(t.CSV, csvRow)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// linkCheck says whether the added publish p50 is what the links explain,
// allowing each bound the jitter and 10% (batching and scheduling on a
// shared machine).
func linkCheck(added, lo, hi float64, nw *workload.Network) string {
	slack := float64(nw.Jitter)/1e6 + 1
	switch {
	case math.IsNaN(added):
		return "not measured"
	case added < 0.9*lo-slack:
		return "LESS than the links must add: were the links shaped?"
	case added > 1.1*hi+slack:
		return "MORE than the links explain: queueing behind the delay (batches waiting for in-flight requests)"
	}
	return "as the links explain"
}
