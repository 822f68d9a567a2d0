package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/study"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtureRun builds a deterministic run: rate msg/s for 10 one-second
// intervals, with latencies spread around latencyMs.
func fixtureRun(setup string, size, iteration int, rate, latencyMs float64) *results.Run {
	w := &workload.Workload{Name: "payload", Topics: 1, PartitionsPerTopic: 1, MessageSize: size, ProducersPerTopic: 1}
	pub, e2eH := metrics.NewHDR(), metrics.NewHDR()
	for i := range 1000 {
		v := int64(latencyMs*1000) + int64(i%100)*int64(latencyMs*10)
		_ = pub.RecordValue(v)
		_ = e2eH.RecordValue(v + 500)
	}
	r := &results.Run{
		Schema: results.Schema, ID: fmt.Sprintf("%s-%d-%d", setup, size, iteration), Workload: w,
		Driver:      results.Driver{Name: "kafka", ReplicationFactor: 1},
		Environment: results.Environment{BrokerVersion: "Apache Kafka v4.3", CPUModel: "test CPU", CPUCores: 2, MemoryBytes: 8 << 30},
		Study: &results.StudyRun{Name: "fixture", Workload: "payload", Setup: setup, Brokers: 1, Iteration: iteration,
			Params: []results.Param{{Name: "messageSize", Value: fmt.Sprint(size)}}},
		Price: &results.Price{PerNodeHour: 0.38, Nodes: 3, Currency: "USD"},
	}
	for s := range 10 {
		iv := results.Interval{StartSeconds: float64(s), EndSeconds: float64(s + 1), Phase: results.Measure, Backlog: int64(s * 10)}
		iv.PublishRate, iv.ConsumeRate = rate+float64(s), rate
		iv.PublishLatency = metrics.Summarize(pub)
		iv.EndToEndLatency = metrics.Summarize(e2eH)
		r.Intervals = append(r.Intervals, iv)
	}
	m := &r.Measured
	m.DurationSeconds = 10
	m.PublishRate, m.ConsumeRate = rate, rate
	m.PublishMBps = rate * float64(size) / 1e6
	m.Acked, m.Sent, m.Consumed = int64(rate*10), int64(rate*10), int64(rate*10)
	m.PublishLatency, m.EndToEndLatency = metrics.Summarize(pub), metrics.Summarize(e2eH)
	r.Counts = results.Counts{Sent: int64(rate * 12), Acked: int64(rate * 12), Consumed: int64(rate * 12)}
	r.Histograms.PublishLatency, _ = metrics.Encode(pub)
	r.Histograms.EndToEndLatency, _ = metrics.Encode(e2eH)
	return r
}

// fixtureStudy writes a study directory: one setup swept over three sizes
// with two iterations each, and one skipped setup.
func fixtureStudy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	idx := study.Index{Schema: study.IndexSchema, Name: "fixture", Scale: study.Quick,
		Columns: []string{"setup", "messageSize", "publishRate", "publishMBps", "publishP99", "e2eP99", "costPerBillion"}}
	for _, size := range []int{1024, 10240, 102400} {
		for it := 1; it <= 2; it++ {
			rate := 50e6 / float64(size) * (1 + 0.02*float64(it))
			r := fixtureRun("one-broker", size, it, rate, float64(size)/1024)
			file := filepath.Join("runs", r.ID+".json")
			if err := results.Write(filepath.Join(dir, file), r); err != nil {
				t.Fatal(err)
			}
			idx.Runs = append(idx.Runs, study.Entry{Key: r.ID, Setup: "one-broker", Iteration: it, Status: study.Done, File: file})
		}
	}
	idx.Runs = append(idx.Runs, study.Entry{Key: "three-brokers_it1", Setup: "three-brokers", Status: study.Skipped,
		Reason: `setup "three-brokers" needs the cluster capability`})
	if err := results.Write(filepath.Join(dir, "study.json"), idx); err != nil {
		t.Fatal(err)
	}
	return dir
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestTablesGolden checks the study-shaped summary in Markdown and CSV:
// medians over iterations with their range, formatted numbers, and the
// cost per billion messages.
func TestTablesGolden(t *testing.T) {
	in, err := Load([]string{fixtureStudy(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Groups) != 3 || len(in.Skipped) != 1 {
		t.Fatalf("%d groups, %d skipped; want 3 and 1", len(in.Groups), len(in.Skipped))
	}
	sum, err := in.SummaryTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []struct {
		name string
		t    *Table
	}{{"summary", sum}, {"accounting", in.AccountingTable()}} {
		var md, csv bytes.Buffer
		if err := tb.t.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if err := tb.t.WriteCSV(&csv); err != nil {
			t.Fatal(err)
		}
		golden(t, tb.name+".md", md.Bytes())
		golden(t, tb.name+".csv", csv.Bytes())
	}
}

func TestCostPerBillion(t *testing.T) {
	r := fixtureRun("x", 100, 1, 100_000, 1)
	// 3 nodes x $0.38 = $1.14 per hour for 360M messages per hour.
	if got, want := costPerBillion(r), 1.14/(100_000*3600)*1e9; math.Abs(got-want) > 1e-9 {
		t.Fatalf("cost per billion = %v, want %v", got, want)
	}
}

func TestUnknownColumn(t *testing.T) {
	in, err := Load([]string{fixtureStudy(t)})
	if err != nil {
		t.Fatal(err)
	}
	in.Columns = []string{"setup", "throughput"}
	if _, err := in.SummaryTable(); err == nil || !strings.Contains(err.Error(), "publishRate") {
		t.Fatalf("unknown column: %v, want an error listing the known columns", err)
	}
}

// TestReportInChromium renders the report and opens it in headless
// Chromium (Debian's package; CI installs it): every chart must have
// rendered with drawn paths, the summary must hold the runs' numbers, and
// the browser must log no error from the page. A screenshot is kept in
// out/test-artifacts/.
func TestReportInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must install Debian's chromium package for this test")
		}
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	dir := t.TempDir()
	in, err := Load([]string{fixtureStudy(t)})
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "report.html")
	w, err := Write(in, html, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Files) < 10 {
		t.Errorf("wrote %d side files: %v", len(w.Files), w.Files)
	}
	run := chromium(t, browser, html)
	dom, logs := run("--dump-dom")
	figures := regexp.MustCompile(`(?s)<figure class="chart" id="chart-([^"]+)"([^>]*)>(.*?)</figure>`).FindAllStringSubmatch(dom, -1)
	charts, _ := in.Charts()
	if len(figures) != len(charts) || len(figures) < 7 {
		t.Fatalf("the page shows %d charts, the report has %d", len(figures), len(charts))
	}
	interactive := 0
	for _, f := range figures {
		if !strings.Contains(f[3], "<svg") || strings.Count(f[3], "<path") < 5 {
			t.Errorf("chart %s has no SVG, or an empty one", f[1])
		}
		if !strings.Contains(f[2], "data-plot") {
			continue
		}
		// Drawn again by uPlot: a canvas, and a legend with one entry
		// per line besides the x axis's.
		interactive++
		if !strings.Contains(f[3], "<canvas") || strings.Count(f[3], "u-series") < 2 {
			t.Errorf("chart %s was not drawn interactively", f[1])
		}
	}
	if interactive < 7 {
		t.Errorf("%d interactive charts: every time series and distribution must be one", interactive)
	}
	for _, want := range []string{"50,293 (49,805–50,781)", "597,656", "Runs not made", "cluster capability", "Cost per billion msgs"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	consoleErrors(t, logs)
	screenshot(t, run, "report.png")
}

// chromium returns a function that opens the page html in headless
// Chromium (browser) with extra flags and returns its stdout and stderr.
func chromium(t *testing.T, browser, html string) func(extra ...string) (stdout, stderr string) {
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1400,3000"}
	return func(extra ...string) (stdout, stderr string) {
		cmd := exec.Command(browser, append(append(args, extra...), "file://"+html)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("chromium: %v\n%s", err, e.String())
			}
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("chromium did not finish within 90 s")
		}
		return o.String(), e.String()
	}
}

// screenshot has run take a screenshot of its page into
// out/test-artifacts/name.
func screenshot(t *testing.T, run func(extra ...string) (string, string), name string) {
	artifacts, _ := filepath.Abs(filepath.Join("..", "..", "out", "test-artifacts"))
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, name)
	run("--screenshot=" + shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
}

// consoleErrors fails t for every error the page logged.
func consoleErrors(t *testing.T, logs string) {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("the page logged: %s", line)
		}
	}
}

// TestCompareGolden compares a study with a copy whose second setup ran
// 10% faster: matched by configuration, with the relative change.
func TestCompareGolden(t *testing.T) {
	a, err := Load([]string{fixtureStudy(t)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load([]string{fixtureStudy(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range b.Groups[1].Runs {
		r.Measured.PublishRate *= 1.1
	}
	tb, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := tb.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.md", md.Bytes())
	merged := Merge(a, b, "before", "after")
	sum, err := merged.SummaryTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 6 || !strings.HasPrefix(sum.Rows[0][0], "before: ") || !strings.HasPrefix(sum.Rows[3][0], "after: ") {
		t.Errorf("merged summary rows: %v", sum.Rows)
	}
	if _, err := Compare(a, &Input{Groups: []*Group{{Label: "other", Runs: a.Groups[0].Runs}}}); err == nil {
		t.Error("comparing inputs without a shared configuration succeeded")
	}
}

// TestFaultsInReport: a run's fault events become a table row each, with
// the recovery and the accounting, and a marker on every time chart.
func TestFaultsInReport(t *testing.T) {
	r := fixtureRun("kill", 1024, 1, 1000, 5)
	back := 3.0
	r.Faults = []results.FaultEvent{
		{AtSeconds: 4, Action: "kill leader", Target: "node 2 (127.0.1.2)", Recovery: &results.Recovery{RateBefore: 1000, LowestRate: 12, RecoverySeconds: &back, MaxPublishLatencyMs: 2500, UnavailableSeconds: 1.5}},
		{AtSeconds: 7, Action: "restart the node of 'kill leader'", Error: "no such node"},
	}
	r.Counts.Lost, r.Counts.Failed, r.Counts.FailedByKind = 3, 7, map[string]int64{"NOT_ENOUGH_REPLICAS": 7}
	moved := 2
	r.LeaderMoves = &moved
	in := &Input{Title: "faults", Groups: []*Group{{Label: "kill", Runs: []*results.Run{r}}}}
	ft := in.FaultTable()
	if ft == nil || len(ft.Rows) != 2 {
		t.Fatalf("fault table %+v: want two rows", ft)
	}
	want := []string{"kill", "4.0", "kill leader", "node 2 (127.0.1.2)", "1,000", "12", "3.0", "2,500.0", "1.50", "3", "0", "0", "7 NOT_ENOUGH_REPLICAS=7", "2"}
	if strings.Join(ft.Rows[0], "|") != strings.Join(want, "|") {
		t.Errorf("row %q, want %q", ft.Rows[0], want)
	}
	if !strings.Contains(ft.Rows[1][3], "FAILED: no such node") || ft.Rows[1][6] != "–" {
		t.Errorf("failed fault row %q", ft.Rows[1])
	}
	charts, err := in.Charts()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if strings.Contains(c.Name, "rate") && !strings.Contains(string(c.SVG), "fault: kill leader") {
			t.Errorf("chart %s has no fault marker", c.Name)
		}
	}
	if l := in.Losses(); len(l) != 1 || !strings.Contains(l[0], "kill: 3 acknowledged messages were never delivered") {
		t.Errorf("losses %q: want the run's 3 lost messages named", l)
	}
	var html bytes.Buffer
	w, err := Write(in, filepath.Join(t.TempDir(), "r.html"), "test")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(w.HTML)
	html.Write(page)
	if !strings.Contains(html.String(), "ACKNOWLEDGED MESSAGES LOST") {
		t.Error("the report does not say loudly that messages were lost")
	}
	if (&Input{Groups: []*Group{{Label: "x", Runs: []*results.Run{fixtureRun("x", 1024, 1, 1000, 5)}}}}).FaultTable() != nil {
		t.Error("a fault table for runs without faults")
	}
}

// TestPublishedBesideMeasured: each published figure gets the median of
// the runs it matches, and a figure relative to another compares the
// published ratio with the measured one.
func TestPublishedBesideMeasured(t *testing.T) {
	a1, a2 := fixtureRun("fast", 1024, 1, 1000, 5), fixtureRun("fast", 1024, 2, 1200, 5)
	b := fixtureRun("resilient", 1024, 1, 250, 5)
	in := &Input{Groups: []*Group{{Label: "fast", Runs: []*results.Run{a1, a2}}, {Label: "resilient", Runs: []*results.Run{b}}},
		Published: []*workload.Published{{Source: "doc", Figures: []workload.PublishedFigure{
			{Label: "Fast", Match: map[string]string{"setup": "fast"}, Metric: "publishRate", Value: 2000},
			{Label: "Resilient", Match: map[string]string{"setup": "resilient", "messageSize": "1024"}, Metric: "publishRate", Value: 1000, RelativeTo: "Fast"},
			{Label: "Nothing", Match: map[string]string{"setup": "none"}, Metric: "publishRate", Value: 10},
		}}}}
	pt := in.PublishedTable()
	if pt == nil || len(pt.Rows) != 3 {
		t.Fatalf("table %+v", pt)
	}
	// Fast: median of 1000 and 1200 = 1100, 0.55 of the published 2000.
	if got := strings.Join(pt.Rows[0][3:6], "|"); got != "2,000|1,100|0.550" {
		t.Errorf("Fast row %q", pt.Rows[0])
	}
	// Resilient: published 1000/2000 = 0.5, measured 250/1100 = 0.227, shape 0.455.
	if got := strings.Join(pt.Rows[1][6:], "|"); got != "Fast|0.500|0.227|0.455" {
		t.Errorf("Resilient row %q", pt.Rows[1])
	}
	if pt.Rows[2][4] != "–" {
		t.Errorf("a figure no run matches shows %q", pt.Rows[2][4])
	}
}

// TestAccountingTableSaysTheVerdict: every run's verdict is in the report,
// with its reason: a disturbed machine and consumers that fell behind are
// named there as in the summary.
func TestAccountingTableSaysTheVerdict(t *testing.T) {
	disturbed := &results.Run{Counts: results.Counts{Sent: 10, Acked: 10, Consumed: 10},
		Measured: results.Aggregate{System: &results.System{OtherCPU: 140, Cores: 2}}}
	behind := &results.Run{Counts: results.Counts{Sent: 10, Acked: 10, Consumed: 10},
		Measured: results.Aggregate{ConsumersBehind: "the consumers fell behind: they received 2634 msg/s"}}
	in := &Input{Groups: []*Group{{Label: "a", Runs: []*results.Run{disturbed}}, {Label: "b", Runs: []*results.Run{behind}}}}
	tb := in.AccountingTable()
	last := len(tb.Headers) - 1
	if tb.Headers[last] != "Verdict" || len(tb.Rows) != 2 {
		t.Fatalf("table %+v", tb)
	}
	for i, want := range []string{"disturbed: other processes used 1.4 of 2 cores", "consumer-bound: the consumers fell behind"} {
		if got := tb.Rows[i][last]; !strings.HasPrefix(got, want) {
			t.Errorf("row %d verdict %q, want %q...", i, got, want)
		}
	}
}

// TestAccountingTableShowsUnprovenLosses: messages that were never
// delivered but could not be proven gone, and those a re-read found late,
// have columns of their own, apart from the proven losses.
func TestAccountingTableShowsUnprovenLosses(t *testing.T) {
	r := &results.Run{Counts: results.Counts{Sent: 100, Acked: 100, Consumed: 93, Lost: 1, UnconfirmedLoss: 4, DeliveredLate: 2}}
	in := &Input{Groups: []*Group{{Label: "a", Runs: []*results.Run{r}}}}
	tb := in.AccountingTable()
	col := func(header string) int {
		t.Helper()
		i := slices.Index(tb.Headers, header)
		if i < 0 {
			t.Fatalf("no column %q in %v", header, tb.Headers)
		}
		return i
	}
	for header, want := range map[string]string{"Lost": "1", "Unconfirmed loss": "4", "Delivered late": "2"} {
		if got := tb.Rows[0][col(header)]; got != want {
			t.Errorf("%s: %q, want %q", header, got, want)
		}
		if got := tb.CSV[0][col(header)]; got != want {
			t.Errorf("%s in CSV: %q, want %q", header, got, want)
		}
	}
}

// TestTransactionsInReport: a study of transaction sizes and abort rates
// beside a baseline without transactions tabulates commit latency, abort
// rate and aborted reads (none for the baseline), and charts throughput
// by abort rate, whose 0 a log axis could not show, on a linear one.
func TestTransactionsInReport(t *testing.T) {
	dir := t.TempDir()
	idx := study.Index{Schema: study.IndexSchema, Name: "transactions", Scale: study.Quick,
		Columns: []string{"setup", "transactionSize", "transactionAbortRate", "publishRate", "commitP99", "committed", "aborted", "abortRate", "abortedRead"}}
	for i, abortRate := range []string{"", "0", "0.1"} {
		r := fixtureRun("baseline", 1024, 1, float64(30_000-10_000*i), 1)
		r.ID = fmt.Sprintf("run-%d", i)
		r.Study.Params = nil
		if abortRate != "" {
			r.Study.Setup = "transactions"
			r.Study.Params = []results.Param{{Name: "transactionSize", Value: "100"}, {Name: "transactionAbortRate", Value: abortRate}}
			r.Counts.Transactions = &results.TransactionCounts{Committed: 90, Aborted: int64(10 * (i - 1)), AbortedMessages: int64(1000 * (i - 1))}
			r.Measured.CommitLatency = &metrics.Latency{Count: 90, P50: 4, P99: 12.5}
		}
		file := filepath.Join("runs", r.ID+".json")
		if err := results.Write(filepath.Join(dir, file), r); err != nil {
			t.Fatal(err)
		}
		idx.Runs = append(idx.Runs, study.Entry{Key: r.ID, Setup: r.Study.Setup, Iteration: 1, Status: study.Done, File: file})
	}
	if err := results.Write(filepath.Join(dir, "study.json"), idx); err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	charts, err := in.Charts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(charts, func(c Chart) bool { return c.Name == "sweep-transactionAbortRate" }) {
		t.Error("no chart of throughput by transactionAbortRate")
	}
	tbl, err := in.SummaryTable()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(tbl.Rows)
	for _, want := range []string{"[baseline   30,000 – – – – –]", "[transactions 100 0 20,000 12.50 90 0 0.000 0]", "[transactions 100 0.1 10,000 12.50 90 10 0.100 0]"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary rows %s: want %s", got, want)
		}
	}
}
