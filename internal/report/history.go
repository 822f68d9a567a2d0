package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/brokerbench/brokerbench/internal/changepoint"
	"github.com/brokerbench/brokerbench/internal/history"
)

// HistoryOptions choose what a history page shows.
type HistoryOptions struct {
	// Metrics are charted and searched for change points; none:
	// history.DefaultCheckMetrics.
	Metrics []string
	// Threshold is the smallest relative shift of a regression (0.05: 5%).
	Threshold float64
	// AllRuns keeps the runs whose verdict says their figures describe
	// something other than the broker (history.Trusted leaves them out).
	AllRuns bool
}

// historyPage is what the history template renders.
type historyPage struct {
	Title, Benchmark, Generated, Version string
	Runs, LeftOut                        int
	From, To                             string
	Releases                             []string
	Series                               []historySeries
	chartAssets
}

// historySeries is one series of the benchmark: a chart per metric, each
// with its change points beside it, and its runs.
type historySeries struct {
	Title   string
	Metrics []historyMetric
	Runs    *Table
}

type historyMetric struct {
	Chart   pageChart
	Changes []historyChange
	// Short says the series is too short for a change point.
	Short bool
}

// historyChange is a change point as the page says it.
type historyChange struct {
	Tag, Shift string
	Bad        bool
	Lines      []string
}

// WriteHistory writes the history of one benchmark, recs (its runs,
// oldest first), to htmlPath as one page that opens offline: for each of
// its series (a node count) and each metric, the values run by run,
// drawn as the report's charts are, with the change points history.Check
// finds marked, and beside each the shift and what changed between the
// runs on either side; then the runs themselves.
func WriteHistory(recs []history.Record, o HistoryOptions, htmlPath, version string) error {
	if len(recs) == 0 {
		return errors.New("no runs of the benchmark in the history")
	}
	metrics := o.Metrics
	if len(metrics) == 0 {
		metrics = history.DefaultCheckMetrics
	}
	kept := recs
	if !o.AllRuns {
		kept = history.Trusted(recs)
	}
	checked, err := history.Check(kept, history.CheckOptions{Metrics: metrics, Threshold: o.Threshold, AllRuns: true})
	if err != nil {
		return err
	}
	first := recs[0]
	pg := historyPage{
		Title:     fmt.Sprintf("%s on %s: history", first.Workload, first.Broker),
		Benchmark: first.Benchmark, Generated: time.Now().UTC().Format(time.RFC3339), Version: version,
		Runs: len(recs), LeftOut: len(recs) - len(kept),
		From: first.Time.Format("2006-01-02 15:04"), To: recs[len(recs)-1].Time.Format("2006-01-02 15:04"),
		chartAssets: newChartAssets(),
	}
	for _, r := range recs {
		if v := r.Env.BrokerVersion; v != "" && !slices.Contains(pg.Releases, v) {
			pg.Releases = append(pg.Releases, v)
		}
	}
	for si, s := range history.Group(kept) {
		hs := historySeries{Title: s.Title()}
		var charted []string
		for _, m := range metrics {
			hm, err := historyChart(&s, si, m, checked)
			if err != nil {
				return err
			}
			if hm != nil {
				hs.Metrics = append(hs.Metrics, *hm)
				charted = append(charted, m)
			}
		}
		hs.Runs = runsTable(s.Records, charted)
		pg.Series = append(pg.Series, hs)
	}
	html, err := execute(historyTemplate, pg)
	if err != nil {
		return err
	}
	return os.WriteFile(htmlPath, html, 0o644)
}

// historyChart charts metric m of series s (the si-th) run by run, its
// change points in checked marked between the runs on either side; nil
// if no run of s has m.
func historyChart(s *history.Series, si int, m string, checked *history.Checked) (*historyMetric, error) {
	values, runs := s.Values(m)
	if len(values) == 0 {
		return nil, nil
	}
	ticks := runTicks(runs)
	line := series{label: m}
	for i, v := range values {
		line.xy = append(line.xy, plotter.XY{X: float64(i), Y: v})
	}
	hm := &historyMetric{Short: len(values) < 2*changepoint.DefaultMinSegment}
	var marks []timeMark
	for _, ch := range checked.Changes {
		if ch.Series != s.Key || ch.Metric != m {
			continue
		}
		marks = append(marks, timeMark{at: float64(ch.Index) - 0.5, label: fmt.Sprintf("change %+.1f%%", 100*ch.RelativeShift)})
		hm.Changes = append(hm.Changes, historyChange{Tag: ch.Tag(), Shift: ch.Shift(), Bad: ch.Regression, Lines: ch.Explanation()})
	}
	unit := metricUnit(m)
	ax := axes{xTicks: ticks}
	title := fmt.Sprintf("%s, run by run", m)
	svg, err := render(title, "run (oldest first)", unit, ax, []series{line}, marks...)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("history-%d-%s", si+1, chartFileName(m))
	pc, err := newPageChart(Chart{Name: name, Title: title, SVG: svg, Plot: newPlot("run", unit, ax, []series{line}, marks)})
	if err != nil {
		return nil, err
	}
	hm.Chart = pc
	return hm, nil
}

// runTicks names each run on a history chart's x axis: by its broker
// release when the runs span several (the product name left out), else
// by its start time.
func runTicks(runs []history.Record) []string {
	releases := map[string]bool{}
	for _, r := range runs {
		releases[r.Env.BrokerVersion] = true
	}
	ticks := make([]string, len(runs))
	for i, r := range runs {
		ticks[i] = r.Time.Format("01-02 15:04")
		if len(releases) > 1 {
			ticks[i] = cmp.Or(releaseName(r.Env.BrokerVersion), "?")
		}
	}
	return ticks
}

// metricUnit is the unit of a history metric's values.
func metricUnit(m string) string {
	switch {
	case strings.HasSuffix(m, "Rate"):
		return "msgs/s"
	case strings.HasSuffix(m, "MBps"):
		return "MB/s"
	case strings.HasSuffix(m, "Cpu"):
		return "% of one core"
	case strings.Contains(m, "."):
		return "ms"
	}
	return "count"
}

// runsTable lists the runs of a series with their figures of metrics.
func runsTable(recs []history.Record, metrics []string) *Table {
	t := &Table{Title: "Runs", Headers: append([]string{"Time", "Run", "Broker", "brokerbench", "Verdict"}, metrics...)}
	for _, r := range recs {
		row := []string{r.Time.Format("2006-01-02 15:04:05"), r.ID, r.Env.BrokerVersion, strings.TrimSpace(r.Env.BrokerbenchVersion + " " + r.Env.BrokerbenchCommit), r.Verdict}
		for _, m := range metrics {
			v, ok := r.Figures[m]
			switch {
			case !ok || math.IsNaN(v):
				row = append(row, "–")
			case strings.Contains(m, "."):
				row = append(row, formatNum(v, 2))
			default:
				row = append(row, formatNum(v, 0))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
