package report

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// TestLegendBelowPlot: the legend takes a strip of its own below the plot,
// in columns wide enough for the longest label, so it never covers data
// and its labels never overlap; a chart without labels has no strip.
func TestLegendBelowPlot(t *testing.T) {
	svgHeight := func(svg []byte) float64 {
		m := regexp.MustCompile(`<svg[^>]*height="([0-9.]+)pt"`).FindSubmatch(svg)
		if m == nil {
			t.Fatalf("no height in %.200s", svg)
		}
		h, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	chart := func(n int) []byte {
		ss := make([]series, n)
		for i := range ss {
			ss[i] = series{label: fmt.Sprintf("producers=%d / iteration #%d", i, i), xy: plotter.XYs{{X: 1, Y: float64(i)}, {X: 2, Y: float64(i + 1)}}}
		}
		svg, err := render("t", "x", "y", axes{}, ss)
		if err != nil {
			t.Fatal(err)
		}
		return svg
	}
	unlabelled, err := render("t", "x", "y", axes{}, []series{{xy: plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	if h := svgHeight(unlabelled); h != float64(chartHeight) {
		t.Errorf("chart without labels is %.1f pt high, want the plot's %.1f", h, float64(chartHeight))
	}
	one, twelve := chart(1), chart(12)
	if !(svgHeight(one) > float64(chartHeight) && svgHeight(twelve) > svgHeight(one)) {
		t.Errorf("heights: plot %.1f, 1 label %.1f, 12 labels %.1f: the strip must grow with the labels", float64(chartHeight), svgHeight(one), svgHeight(twelve))
	}
	for i := range 12 {
		if label := fmt.Sprintf("iteration #%d<", i); strings.Count(string(twelve), label) != 1 {
			t.Errorf("label %q appears %d times", label, strings.Count(string(twelve), label))
		}
	}

	entries := make([]legendEntry, 12)
	for i := range entries {
		entries[i].label = fmt.Sprintf("a rather long legend label, number %d", i)
	}
	l := newLegendStrip(entries)
	if l.cols*l.rows < len(entries) || l.cols < 2 {
		t.Fatalf("%d columns x %d rows for %d entries", l.cols, l.rows, len(entries))
	}
	colWidth := (chartWidth - legendLeftMargin) / vg.Length(l.cols)
	if textWidth := l.style.ThumbnailWidth + l.style.TextStyle.Rectangle(" "+entries[11].label).Max.X; colWidth < textWidth {
		t.Errorf("columns %.1f pt wide, a label needs %.1f", float64(colWidth), float64(textWidth))
	}
}

// TestBrokerMetricCharts: every headline broker metric that changed gets
// a chart with the fault markers, a line per label set; one that stayed
// the same, or is not a headline, gets none.
func TestBrokerMetricCharts(t *testing.T) {
	r := fixtureRun("kill", 1024, 1, 1000, 5)
	r.Faults = []results.FaultEvent{{AtSeconds: 2, Action: "kill leader"}}
	for i := range r.Intervals {
		urp := 0.0
		if i >= 2 {
			urp = 6
		}
		r.Intervals[i].System = &results.System{CPUUser: 40, ClientCPU: 30, BrokerSampled: true, BrokerCPU: 80, BrokerRSSMB: 900, DiskWriteMBps: 5, NetRxMBps: 9, Broker: map[string]float64{
			"kafka_server_messagesin_per_second":                    float64(1000 - 100*i),
			"kafka_server_replicamanager_underreplicatedpartitions": urp,
			"kafka_server_replicamanager_partitioncount":            12,
			"rabbitmq_erlang_gc_runs_per_second":                    float64(10 * i),
			`kafka_network_requests_per_second{request="Produce"}`:  float64(100 + i),
			`kafka_network_requests_per_second{request="Fetch"}`:    float64(200 - i),
		}}
	}
	in := &Input{Title: "broker", Groups: []*Group{{Label: "kill", Runs: []*results.Run{r}}}}
	charts, err := in.Charts()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Chart{}
	for _, c := range charts {
		if strings.HasPrefix(c.Name, "broker-kafka") {
			got[c.Name] = c
		}
	}
	for _, name := range []string{"broker-kafka-server-messagesin-per-second", "broker-kafka-server-replicamanager-underreplicatedpartitions", "broker-kafka-network-requests-per-second"} {
		c, ok := got[name]
		if !ok {
			t.Errorf("no chart %s among %v", name, slices.Collect(maps.Keys(got)))
			continue
		}
		if !strings.Contains(string(c.SVG), "fault: kill leader") {
			t.Errorf("chart %s has no fault marker", name)
		}
	}
	// One chart per metric, a line per label set.
	if c := got["broker-kafka-network-requests-per-second"]; c.Plot == nil || len(c.Plot.Series) != 2 {
		t.Errorf("the requests chart: %+v, want the Produce and Fetch lines", c.Plot)
	}
	if _, ok := got["broker-kafka-server-replicamanager-partitioncount"]; ok || len(got) != 3 {
		t.Errorf("charts %v: a series that never changed is charted", slices.Collect(maps.Keys(got)))
	}
	for _, c := range charts {
		if strings.Contains(c.Name, "erlang") {
			t.Errorf("chart %s: the runtime's figures are not charted", c.Name)
		}
	}
}

// TestConsumerLagAndProfileCharts: a run with consumers gets a consumer
// lag chart that goes on through the drain, marked where the producers
// stopped; a run with a rate profile gets its target beside its achieved
// rate; a run with neither gets neither chart.
func TestConsumerLagAndProfileCharts(t *testing.T) {
	charts := func(r *results.Run) map[string]Chart {
		in := &Input{Title: "t", Groups: []*Group{{Label: "run", Runs: []*results.Run{r}}}}
		cs, err := in.Charts()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Chart{}
		for _, c := range cs {
			got[c.Name] = c
		}
		return got
	}
	plain := fixtureRun("plain", 100, 1, 1000, 5)
	if got := charts(plain); got["consumer-lag"].Plot != nil || got["rate-profile"].Plot != nil {
		t.Errorf("a run without consumers or profile has charts %v", slices.Collect(maps.Keys(got)))
	}

	r := fixtureRun("slow", 100, 1, 1000, 5)
	w := *r.Workload
	w.SubscriptionsPerTopic, w.ConsumersPerSubscription = 1, 2
	w.RateProfile = &workload.RateProfile{Ramp: &workload.Ramp{From: 500, To: 1500, Over: 10 * time.Second}}
	r.Workload = &w
	for i := range r.Intervals {
		r.Intervals[i].TargetRate = 500 + 100*float64(i) + 50
	}
	r.Intervals = append(r.Intervals,
		results.Interval{StartSeconds: 10, EndSeconds: 11, Phase: results.Drain, Backlog: 40},
		results.Interval{StartSeconds: 11, EndSeconds: 12, Phase: results.Drain, Backlog: 0})
	got := charts(r)
	lag := got["consumer-lag"]
	if lag.Plot == nil || len(lag.Plot.Series) != 1 {
		t.Fatalf("consumer lag chart %+v, want one line", lag.Plot)
	}
	if s := lag.Plot.Series[0]; len(s.X) != 12 || s.X[11] != 12 || s.Y[9] != 90 || s.Y[11] != 0 {
		t.Errorf("consumer lag line %+v: want the 10 measured intervals' backlog and the 2 of the drain", s)
	}
	if m := lag.Plot.Marks; len(m) != 1 || m[0].At != 10 || m[0].Label != "producers stopped" || !strings.Contains(string(lag.SVG), "producers stopped") {
		t.Errorf("consumer lag marks %+v: want the producers' stop at 10 s", m)
	}
	prof := got["rate-profile"]
	if prof.Plot == nil || len(prof.Plot.Series) != 2 {
		t.Fatalf("rate profile chart %+v, want target and achieved lines", prof.Plot)
	}
	target, achieved := prof.Plot.Series[0], prof.Plot.Series[1]
	if len(target.Y) != 10 || target.Y[3] != 850 || achieved.Y[3] != 1003 || !strings.HasSuffix(target.Label, "target") || !strings.HasSuffix(achieved.Label, "achieved") {
		t.Errorf("rate profile lines %+v and %+v: want the target and achieved rate of each measured interval", target, achieved)
	}
}
