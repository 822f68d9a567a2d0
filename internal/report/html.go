package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/secret"
)

// The pages' templates: the study report, the history of a benchmark,
// and what both share (style, chart script).
var (
	//go:embed report.html.tmpl
	pageTemplate string
	//go:embed history.html.tmpl
	historyTemplate string
	//go:embed page.html.tmpl
	sharedTemplate string
)

// The charting library the page draws interactive charts with: uPlot
// (MIT, assets/uPlot-LICENSE), 51 KB minified, inlined so that the page
// opens offline.
var (
	//go:embed assets/uPlot.iife.min.js
	uPlotJS string
	//go:embed assets/uPlot.min.css
	uPlotCSS string
)

// AccountingTable has a row per run with its message accounting.
func (in *Input) AccountingTable() *Table {
	t := &Table{Title: "Message accounting",
		Headers:    []string{"Run", "Sent", "Acked", "Failed", "Consumed", "Lost", "Unconfirmed loss", "Delivered late", "Undelivered", "Duplicated", "Out of order", "Stored by broker", "Target", "Verdict"},
		CSVHeaders: []string{"run", "sent", "acked", "failed", "consumed", "lost", "unconfirmedLoss", "deliveredLate", "undelivered", "duplicated", "outOfOrder", "storedByBroker", "target", "verdict"}}
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			c := r.Counts
			stored := "–"
			if c.StoredByBroker != nil {
				stored = formatNum(float64(*c.StoredByBroker), 0)
			}
			target := "max rate"
			if tg := r.Target; tg != nil {
				target = "held"
				if !tg.Held {
					target = "NOT HELD: " + tg.Reason
				}
			}
			if r.Partial {
				target += " (partial: " + r.PartialReason + ")"
			}
			nums := []int64{c.Sent, c.Acked, c.Failed, c.Consumed, c.Lost, c.UnconfirmedLoss, c.DeliveredLate, c.Undelivered, c.Duplicated, c.OutOfOrder}
			row := []string{runLabel(g, r)}
			csvRow := []string{runLabel(g, r)}
			for _, n := range nums {
				row = append(row, formatNum(float64(n), 0))
				csvRow = append(csvRow, strconv.FormatInt(n, 10))
			}
			verdict := results.Judge(r)
			judged := verdict.Kind.String()
			if verdict.Reason != "" {
				judged += ": " + verdict.Reason
			}
			row = append(row, stored, target, judged)
			storedCSV := ""
			if c.StoredByBroker != nil {
				storedCSV = strconv.FormatInt(*c.StoredByBroker, 10)
			}
			csvRow = append(csvRow, storedCSV, target, judged)
			t.Rows = append(t.Rows, row)
			t.CSV = append(t.CSV, csvRow)
		}
	}
	return t
}

// FaultTable has a row per fault event of every run, with what it cost
// and the run's accounting; nil if no run had faults.
func (in *Input) FaultTable() *Table {
	t := &Table{Title: "Faults: what each cost",
		Headers:    []string{"Run", "At (s)", "Fault", "Target", "Rate before (msgs/s)", "Lowest after (msgs/s)", "Back above 90% after (s)", "Max publish latency (ms)", "No acks at all for (s)", "Lost", "Duplicated", "Out of order", "Failed sends", "Leaders moved (run)"},
		CSVHeaders: []string{"run", "atSeconds", "fault", "target", "rateBefore", "lowestRate", "recoverySeconds", "maxPublishLatencyMs", "unavailableSeconds", "lost", "duplicated", "outOfOrder", "failed", "leaderMoves"}}
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			for _, ev := range r.Faults {
				target := ev.Target
				if ev.Error != "" {
					target = "FAILED: " + ev.Error
				}
				row := []string{runLabel(g, r), formatNum(ev.AtSeconds, 1), ev.Action, target, "–", "–", "–", "–", "–"}
				csvRow := []string{runLabel(g, r), csvNum(ev.AtSeconds), ev.Action, target, "", "", "", "", ""}
				if rc := ev.Recovery; rc != nil {
					row[4], row[5], row[7] = formatNum(rc.RateBefore, 0), formatNum(rc.LowestRate, 0), formatNum(rc.MaxPublishLatencyMs, 1)
					csvRow[4], csvRow[5], csvRow[7] = csvNum(rc.RateBefore), csvNum(rc.LowestRate), csvNum(rc.MaxPublishLatencyMs)
					row[8], csvRow[8] = formatNum(rc.UnavailableSeconds, 2), csvNum(rc.UnavailableSeconds)
					row[6] = "NOT RECOVERED"
					if rc.RecoverySeconds != nil {
						row[6], csvRow[6] = formatNum(*rc.RecoverySeconds, 1), csvNum(*rc.RecoverySeconds)
					}
				}
				c := r.Counts
				for _, n := range []int64{c.Lost, c.Duplicated, c.OutOfOrder} {
					row = append(row, formatNum(float64(n), 0))
					csvRow = append(csvRow, strconv.FormatInt(n, 10))
				}
				failed := formatNum(float64(c.Failed), 0) + strings.TrimPrefix(results.FailureKinds(c), ":")
				row, csvRow = append(row, failed), append(csvRow, failed)
				moves, movesCSV := "–", ""
				if r.LeaderMoves != nil {
					moves, movesCSV = strconv.Itoa(*r.LeaderMoves), strconv.Itoa(*r.LeaderMoves)
				}
				row, csvRow = append(row, moves), append(csvRow, movesCSV)
				t.Rows = append(t.Rows, row)
				t.CSV = append(t.CSV, csvRow)
			}
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// BacklogTable has a row per backlog-test run; nil if there is none.
func (in *Input) BacklogTable() *Table {
	t := &Table{Title: "Backlog tests",
		Headers:    []string{"Run", "Target (msgs)", "Peak (msgs)", "Build (s)", "Drain (s)", "Drain (msgs/s)", "Drain (MB/s)", "Completed"},
		CSVHeaders: []string{"run", "targetMessages", "peakMessages", "buildSeconds", "drainSeconds", "drainRate", "drainMBps", "completed"}}
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			b := r.Backlog
			if b == nil {
				continue
			}
			done := fmt.Sprintf("built %v, drained %v", b.Built, b.Drained)
			t.Rows = append(t.Rows, []string{runLabel(g, r), formatNum(float64(b.TargetMessages), 0), formatNum(float64(b.PeakMessages), 0),
				formatNum(b.BuildSeconds, 2), formatNum(b.DrainSeconds, 2), formatNum(b.DrainRate, 0), formatNum(b.DrainMBps, 2), done})
			t.CSV = append(t.CSV, []string{runLabel(g, r), strconv.FormatInt(b.TargetMessages, 10), strconv.FormatInt(b.PeakMessages, 10),
				csvNum(b.BuildSeconds), csvNum(b.DrainSeconds), csvNum(b.DrainRate), csvNum(b.DrainMBps), done})
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// WorkerTable has a row per worker of every distributed run: its share,
// its clock, its start and what it measured; nil if no run was
// distributed.
func (in *Input) WorkerTable() *Table {
	t := &Table{Title: "Workers of distributed runs",
		Headers: []string{"Run", "Worker", "Producers", "Consumers", "Clock offset (ms)", "± (ms)", "Start late (ms)", "Start spread of the run (ms)",
			"Publish (msgs/s)", "Consume (msgs/s)", "Publish p99 (ms)", "CPU (% of a core)", "Error"},
		CSVHeaders: []string{"run", "worker", "producers", "consumers", "clockOffsetMs", "clockErrorMs", "startLateMs", "startSpreadMs",
			"publishRate", "consumeRate", "publishP99", "clientCpu", "error"}}
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			d := r.Distributed
			if d == nil {
				continue
			}
			for _, w := range d.Workers {
				cpu, cpuCSV := "–", ""
				if w.System != nil {
					cpu, cpuCSV = formatNum(w.System.ClientCPU, 0), csvNum(w.System.ClientCPU)
				}
				t.Rows = append(t.Rows, []string{runLabel(g, r), w.Address, strconv.Itoa(w.Producers), strconv.Itoa(w.Consumers),
					formatNum(w.ClockOffsetMs, 3), formatNum(w.ClockErrorMs, 3), formatNum(w.StartLateMs, 3), formatNum(d.StartSpreadMs, 3),
					formatNum(w.Measured.PublishRate, 0), formatNum(w.Measured.ConsumeRate, 0), formatNum(w.Measured.PublishLatency.P99, 2), cpu, w.Error})
				t.CSV = append(t.CSV, []string{runLabel(g, r), w.Address, strconv.Itoa(w.Producers), strconv.Itoa(w.Consumers),
					csvNum(w.ClockOffsetMs), csvNum(w.ClockErrorMs), csvNum(w.StartLateMs), csvNum(d.StartSpreadMs),
					csvNum(w.Measured.PublishRate), csvNum(w.Measured.ConsumeRate), csvNum(w.Measured.PublishLatency.P99), cpuCSV, w.Error})
			}
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// page is what the template renders.
type page struct {
	Title     string
	Generated string
	Version   string
	Sources   []string
	Env       results.Environment
	Tables    []pageTable
	Charts    []pageChart
	Skipped   []skippedRun
	FilesDir  string
	Runs      int
	MemoryGiB string
	// LocalClusters are the distinct local clusters the runs went to, in
	// words that say they shared the machine.
	LocalClusters []string
	// Losses name every run that lost acknowledged messages, or whose
	// broker stores another number than it acknowledged: shown first.
	Losses []string
	chartAssets
}

// chartAssets are what a page needs to draw its charts.
type chartAssets struct {
	// ChartJS and ChartCSS are the charting library, inlined.
	ChartJS  template.JS
	ChartCSS template.CSS
	// Palette is the charts' line colours, as CSS colours.
	Palette []string
}

// newChartAssets returns the charting library and the palette.
func newChartAssets() chartAssets {
	a := chartAssets{ChartJS: template.JS(uPlotJS), ChartCSS: template.CSS(uPlotCSS)}
	for _, c := range palette {
		r, g, b, _ := c.RGBA()
		a.Palette = append(a.Palette, fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8))
	}
	return a
}

// execute renders the page template text (with the shared templates)
// with data.
func execute(text string, data any) ([]byte, error) {
	tmpl, err := template.New("page").Parse(sharedTemplate)
	if err == nil {
		tmpl, err = tmpl.Parse(text)
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, err
	}
	return secret.RedactBytes(buf.Bytes()), nil
}

// Losses names every run that lost acknowledged messages, or whose broker
// stores a different number of messages than were acknowledged.
func (in *Input) Losses() []string {
	var out []string
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			c := r.Counts
			switch {
			case c.Lost > 0:
				out = append(out, fmt.Sprintf("%s: %d acknowledged messages were never delivered (lost)", runLabel(g, r), c.Lost))
			case c.UnconfirmedLoss > 0:
				out = append(out, fmt.Sprintf("%s: %d acknowledged messages were never delivered (unconfirmed loss: %s)", runLabel(g, r), c.UnconfirmedLoss, c.RereadErrors()))
			case !c.StoredExplained():
				out = append(out, fmt.Sprintf("%s: the broker stores %d messages but acknowledged %d", runLabel(g, r), *c.StoredByBroker, c.Acked))
			}
		}
	}
	return out
}

type pageTable struct {
	*Table
	ID string
}

type pageChart struct {
	Chart
	SVG  template.HTML
	File string
	// PlotJSON is the chart's data for the interactive view ("" without).
	PlotJSON string
}

type skippedRun struct{ Key, Reason string }

// Written lists what Write produced.
type Written struct {
	HTML  string
	Files []string
}

// Write renders the report to htmlPath, with every table as Markdown and
// CSV and every chart as SVG in a directory beside it (NAME-files/). The
// HTML embeds the same charts inline and needs nothing else: it opens
// offline.
func Write(in *Input, htmlPath, version string) (*Written, error) {
	summary, err := in.SummaryTable()
	if err != nil {
		return nil, err
	}
	charts, err := in.Charts()
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(htmlPath), filepath.Ext(htmlPath))
	filesDir := filepath.Join(filepath.Dir(htmlPath), base+"-files")
	// The directory belongs to this report: files of an earlier version of
	// it (a chart no longer drawn) must not linger.
	if err := os.RemoveAll(filesDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filesDir, 0o755); err != nil {
		return nil, err
	}
	out := &Written{HTML: htmlPath}
	writeFile := func(name string, data []byte) error {
		p := filepath.Join(filesDir, name)
		out.Files = append(out.Files, p)
		return os.WriteFile(p, secret.RedactBytes(data), 0o644)
	}
	pg := page{Title: in.Title, Generated: time.Now().UTC().Format(time.RFC3339), Version: version,
		Sources: in.Sources, Env: in.Groups[0].first().Environment, FilesDir: filepath.Base(filesDir)}
	pg.MemoryGiB = formatNum(float64(pg.Env.MemoryBytes)/(1<<30), 1)
	pg.chartAssets = newChartAssets()
	pg.Losses = in.Losses()
	for _, g := range in.Groups {
		for _, r := range g.Runs {
			if lc := r.Environment.LocalCluster; lc != "" && !slices.Contains(pg.LocalClusters, lc) {
				pg.LocalClusters = append(pg.LocalClusters, lc)
			}
		}
	}
	tables := []pageTable{{summary, "summary"}, {in.AccountingTable(), "accounting"}}
	if bt := in.BacklogTable(); bt != nil {
		tables = append(tables, pageTable{bt, "backlog"})
	}
	if ft := in.FaultTable(); ft != nil {
		tables = append(tables, pageTable{ft, "faults"})
	}
	if nt := in.NetworkTable(); nt != nil {
		tables = append(tables, pageTable{nt, "network"})
	}
	if pt := in.PublishedTable(); pt != nil {
		tables = append(tables, pageTable{pt, "published"})
	}
	if wt := in.WorkerTable(); wt != nil {
		tables = append(tables, pageTable{wt, "workers"})
	}
	for _, t := range tables {
		var md, csvBuf bytes.Buffer
		if err := t.WriteMarkdown(&md); err != nil {
			return nil, err
		}
		if err := t.WriteCSV(&csvBuf); err != nil {
			return nil, err
		}
		if err := writeFile(t.ID+".md", md.Bytes()); err != nil {
			return nil, err
		}
		if err := writeFile(t.ID+".csv", csvBuf.Bytes()); err != nil {
			return nil, err
		}
		pg.Tables = append(pg.Tables, t)
	}
	for _, c := range charts {
		if err := writeFile(c.Name+".svg", c.SVG); err != nil {
			return nil, err
		}
		pc, err := newPageChart(c)
		if err != nil {
			return nil, err
		}
		pg.Charts = append(pg.Charts, pc)
	}
	for _, s := range in.Skipped {
		pg.Skipped = append(pg.Skipped, skippedRun{s.Key, s.Reason})
	}
	for _, g := range in.Groups {
		pg.Runs += len(g.Runs)
	}
	html, err := execute(pageTemplate, pg)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(htmlPath, html, 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

// newPageChart is chart c as a page shows it: its SVG inline, and its
// data for the interactive view.
func newPageChart(c Chart) (pageChart, error) {
	pc := pageChart{Chart: c, SVG: template.HTML(c.SVG), File: c.Name + ".svg"}
	if c.Plot != nil {
		data, err := json.Marshal(c.Plot)
		if err != nil {
			return pageChart{}, fmt.Errorf("chart %s: %w", c.Name, err)
		}
		pc.PlotJSON = string(data)
	}
	return pc, nil
}
