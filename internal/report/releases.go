package report

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// releaseFigures are the figures charted against the broker release.
var releaseFigures = []struct{ name, title, column, unit string }{
	{"throughput", "Throughput by broker release", "publishRate", "msgs/s (median, range as bars)"},
	{"publish-p99", "Publish p99 by broker release", "publishP99", "ms (median, range as bars)"},
	{"e2e-p99", "End-to-end p99 by broker release", "e2eP99", "ms (median, range as bars)"},
}

// releaseCharts draw, when the runs ran on two or more broker releases,
// throughput and p99 latencies against the release, oldest first: one
// line per configuration sharing the other settings, the median of its
// iterations with their range as bars.
func (in *Input) releaseCharts() ([]Chart, error) {
	var releases []string
	for _, g := range in.Groups {
		if v := g.first().Environment.BrokerVersion; v != "" && !slices.Contains(releases, v) {
			releases = append(releases, v)
		}
	}
	if len(releases) < 2 {
		return nil, nil
	}
	slices.SortStableFunc(releases, compareReleases)
	var charts []Chart
	for _, f := range releaseFigures {
		col := columns[f.column]
		lines := map[string]*series{}
		var order []string
		for _, g := range in.Groups {
			x := slices.Index(releases, g.first().Environment.BrokerVersion)
			if x < 0 {
				continue
			}
			key := g.first().Workload.Name
			if g.first().Study != nil {
				key = lineKey(g, workload.BrokerVersionParam)
			}
			var vs []float64
			for _, r := range g.Runs {
				if v := col.num(r); !math.IsNaN(v) {
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				continue
			}
			s := lines[key]
			if s == nil {
				s = &series{label: key, errLo: []float64{}, errHi: []float64{}}
				lines[key] = s
				order = append(order, key)
			}
			med, lo, hi := spread(vs)
			s.xy = append(s.xy, plotter.XY{X: float64(x), Y: med})
			s.errLo, s.errHi = append(s.errLo, med-lo), append(s.errHi, hi-med)
		}
		if len(order) == 0 {
			continue
		}
		var ss []series
		for _, k := range order {
			sortSeries(lines[k])
			ss = append(ss, *lines[k])
		}
		names := make([]string, len(releases))
		for i, r := range releases {
			names[i] = releaseName(r)
		}
		ax := axes{xTicks: names}
		svg, err := render(f.title, "broker release", f.unit, ax, ss)
		if err != nil {
			return nil, err
		}
		charts = append(charts, Chart{Name: "release-" + f.name, Title: f.title, SVG: svg, Plot: newPlot("broker release", f.unit, ax, ss, nil),
			Caption: "Each line is one configuration on every release it ran on; the figures of one machine, to compare releases with each other."})
	}
	return charts, nil
}

var releaseNumbers = regexp.MustCompile(`\d+`)

// releaseName is a broker version as an axis names it: its first word
// that starts with a digit ("3.9.1" of "Apache Kafka 3.9.1"), else all of
// it.
func releaseName(version string) string {
	for _, w := range strings.Fields(version) {
		if w[0] >= '0' && w[0] <= '9' {
			return w
		}
	}
	return version
}

// compareReleases orders broker versions ("Apache Kafka 3.9.1") by their
// numbers, part by part: 3.10.0 after 3.9.1.
func compareReleases(a, b string) int {
	na, nb := releaseNumbers.FindAllString(a, -1), releaseNumbers.FindAllString(b, -1)
	for i := range min(len(na), len(nb)) {
		x, _ := strconv.Atoi(na[i])
		y, _ := strconv.Atoi(nb[i])
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(a, b))
}

// categoryTicks names the points of a categorical axis, at most about 12
// of them so that the names do not overlap.
func categoryTicks(names []string) plot.ConstantTicks {
	step := max(1, (len(names)+11)/12)
	var ticks []plot.Tick
	for i, n := range names {
		label := ""
		if i%step == 0 {
			label = n
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	return ticks
}
