package report

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/history"
)

// historyRuns is a benchmark's history: 6 runs on Kafka 3.9.1 publishing
// about 10,000 msg/s, then 6 on 4.0.0 at about 8,000 (a regression of
// 20%), then a disturbed run at 100, which a page leaves out unless told
// otherwise.
func historyRuns() []history.Record {
	var recs []history.Record
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range 13 {
		rate, version, verdict := 10_000.0, "Apache Kafka 3.9.1", "ok"
		if i >= 6 {
			rate, version = 8_000, "Apache Kafka 4.0.0"
		}
		if i == 12 {
			rate, verdict = 100, "disturbed"
		}
		rate += float64(i%3) * 10 // noise
		recs = append(recs, history.Record{
			Version: history.Version, ID: fmt.Sprintf("run-%02d", i), Time: start.Add(time.Duration(i) * time.Hour),
			Workload: "quick", Broker: "kafka", Benchmark: "b1b2b3b4b5b6",
			Env:     history.Env{Nodes: 1, BrokerVersion: version},
			Figures: map[string]float64{"publishRate": rate, "e2e.p99": 5 + float64(i%2)},
			Verdict: verdict,
		})
	}
	return recs
}

// TestHistoryPage: the page of a benchmark draws each metric run by run,
// named by release, marks the change point between the last 3.9.1 run and
// the first 4.0.0 run, and says beside the chart that it is a regression
// and that the broker version changed there; a disturbed run is left out
// and counted.
func TestHistoryPage(t *testing.T) {
	html := filepath.Join(t.TempDir(), "history.html")
	if err := WriteHistory(historyRuns(), HistoryOptions{Metrics: []string{"publishRate", "e2e.p99"}, Threshold: 0.05}, html, "test"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{
		"quick on kafka: history", "benchmark b1b2b3b4b5b6", "13 run(s)", "1 run(s) left out",
		"REGRESSION -20.0%", "from run run-06", "after run run-05",
		"changed: broker version Apache Kafka 3.9.1 -&gt; Apache Kafka 4.0.0",
		`&#34;xTicks&#34;:[&#34;3.9.1&#34;`, `&#34;marks&#34;:[{&#34;at&#34;:5.5`,
		"No change point", // e2e.p99 kept its level
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "run-12") {
		t.Error("the disturbed run is on the page")
	}
	if err := WriteHistory(historyRuns(), HistoryOptions{Metrics: []string{"publishRate"}, AllRuns: true}, html, "test"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(html); !strings.Contains(string(data), "run-12") {
		t.Error("--all-runs left the disturbed run out")
	}
	if err := WriteHistory(nil, HistoryOptions{}, html, "test"); err == nil {
		t.Error("a page of no runs was written")
	}
}

// TestHistoryPageInChromium opens the page in headless Chromium: every
// chart is drawn again interactively, with its release names on the x
// axis, and the page logs no error.
func TestHistoryPageInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must install Debian's chromium package for this test")
		}
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	html := filepath.Join(t.TempDir(), "history.html")
	if err := WriteHistory(historyRuns(), HistoryOptions{Threshold: 0.05}, html, "test"); err != nil {
		t.Fatal(err)
	}
	run := chromium(t, browser, html)
	dom, logs := run("--dump-dom")
	figures := regexp.MustCompile(`(?s)<figure class="chart" id="chart-([^"]+)"[^>]*>(.*?)</figure>`).FindAllStringSubmatch(dom, -1)
	if len(figures) != 2 { // the records hold two of the default metrics
		t.Fatalf("the page shows %d charts, want 2", len(figures))
	}
	for _, f := range figures {
		if !strings.Contains(f[2], "<canvas") || strings.Count(f[2], "u-series") < 2 {
			t.Errorf("chart %s was not drawn interactively", f[1])
		}
	}
	if !strings.Contains(dom, "4.0.0") || !strings.Contains(dom, "REGRESSION") {
		t.Error("the rendered page lacks the releases or the regression")
	}
	consoleErrors(t, logs)
	screenshot(t, run, "history.png")
}

// TestReleaseCharts: runs on several releases are charted against the
// release, oldest first by number (3.10 after 3.9), named by the release
// alone; runs on one release have no such chart.
func TestReleaseCharts(t *testing.T) {
	if got := releaseName("Apache Kafka 3.9.1"); got != "3.9.1" {
		t.Errorf("releaseName: %q", got)
	}
	versions := []string{"Apache Kafka 4.0.0", "Apache Kafka 3.10.0", "Apache Kafka 3.9.1"}
	slices.SortFunc(versions, compareReleases)
	if want := []string{"Apache Kafka 3.9.1", "Apache Kafka 3.10.0", "Apache Kafka 4.0.0"}; !slices.Equal(versions, want) {
		t.Errorf("sorted %v, want %v", versions, want)
	}
	in, err := Load([]string{fixtureStudy(t)})
	if err != nil {
		t.Fatal(err)
	}
	if charts, err := in.releaseCharts(); err != nil || len(charts) != 0 {
		t.Fatalf("one release: %d charts, %v", len(charts), err)
	}
	for i, g := range in.Groups {
		for _, r := range g.Runs {
			r.Environment.BrokerVersion = versions[i%2]
		}
	}
	charts, err := in.releaseCharts()
	if err != nil || len(charts) != 3 {
		t.Fatalf("two releases: %d charts, %v", len(charts), err)
	}
	if p := charts[0].Plot; !slices.Equal(p.XTicks, []string{"3.9.1", "3.10.0"}) || len(p.Series) == 0 {
		t.Errorf("throughput by release: %+v", p)
	}
}
