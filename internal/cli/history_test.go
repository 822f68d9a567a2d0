package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/history"
)

// TestHistoryCheckNamesTheSetting records 10 runs of the memory broker
// with a one-way delay of 1 ms, then 10 with 30 ms, and checks that
// 'history check' finds one change point, at the first 5 ms run, naming
// the setting, and exits 8. The machine may be busy: its runs' verdicts
// are kept (--all-runs); when one was judged (a disturbed machine, a
// missed target), the recorded figures may be off, even inverted (10
// runs of a slowed machine before the change), and only the place and
// the setting are the check's to get right, the direction being the
// reruns'. The step is large, a p50 of about 3 ms to 60, so that a run
// slowed by a busy machine (a p50 of 13 ms was seen) does not place
// the change point before it.
func TestHistoryCheckNamesTheSetting(t *testing.T) {
	if testing.Short() {
		t.Skip("20 runs of a second: not under -short (TestCheck covers the check on records)")
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "history.jsonl")
	var firstSlow string
	judged := false
	for i := range 20 {
		delay := 1
		if i >= 10 {
			delay = 30
		}
		wl := filepath.Join(dir, fmt.Sprintf("w%d.yaml", i))
		text := "name: memory-latency\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 100\nproducersPerTopic: 1\nsubscriptionsPerTopic: 1\n" +
			fmt.Sprintf("rate: 200\nwarmup: 0s\nduration: 1s\ndriver:\n  driver: memory\n  commonConfig: {delay.ms: \"%d\"}\n", delay)
		if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := execute("run", wl, "--history", store, "--label", "test=delay", "--quiet", "--max-send-lag", "200ms",
			"--out", filepath.Join(dir, fmt.Sprintf("r%d.json", i)))
		if code != ExitOK && code != ExitTargetNotHeld && code != ExitLoadGeneratorBound && code != ExitDisturbed {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
		judged = judged || code != ExitOK
		if i == 10 {
			c, err := history.Open(store).Records()
			if err != nil || len(c.Records) != 11 {
				t.Fatalf("after 11 runs the history holds %v (%v)", c, err)
			}
			firstSlow = c.Records[10].ID
		}
	}
	code, stdout, stderr := execute("history", "--history", store, "check", "--label", "test=delay", "--metric", "publish.p50", "--all-runs")
	wants := []string{
		"memory-latency on memory, 1 node(s)",
		"from run " + firstSlow + " ",
		"  changed: setting common/delay.ms 1 -> 30\n",
	}
	switch regression := strings.Contains(stdout, "publish.p50 REGRESSION"); {
	case regression && code != ExitRegression, !regression && code != ExitOK:
		t.Errorf("exit %d for the report\n%s%s", code, stdout, stderr)
	case regression:
		wants = append(wants, "1 series checked, 1 change point(s), 1 regression(s) beyond 5%")
	case !judged:
		t.Errorf("no run was judged, yet the check found no regression\n%s", stdout)
	}
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("check's report lacks %q:\n%s", want, stdout)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^  changed: `).FindAllString(stdout, -1)); n != 1 {
		t.Errorf("%d changes named, want the setting alone:\n%s", n, stdout)
	}

	// The reruns of the last 1 ms run and the first 5 ms run, from their
	// results files, confirm the regression, or reverse an improvement the
	// records of a slowed machine showed.
	t.Chdir(dir) // the reruns' results files
	code, stdout, stderr = execute("history", "--history", store, "check", "--label", "test=delay", "--metric", "publish.p50", "--all-runs", "--rerun", "2")
	if code != ExitRegression {
		t.Errorf("check --rerun 2: exit %d, want %d\n%s%s", code, ExitRegression, stdout, stderr)
	}
	for _, want := range []string{
		"  reruns of " + firstSlow + ": ",
		" 1 confirmed regression(s) beyond 5%\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check --rerun's report lacks %q:\n%s", want, stdout)
		}
	}
	c, err := history.Open(store).Records()
	if err != nil {
		t.Fatal(err)
	}
	if reruns := c.Select(history.Filter{Labels: map[string]string{history.RerunLabel: firstSlow, "test": "delay"}}); len(reruns) != 2 {
		t.Errorf("%d reruns of %s recorded with its labels, want 2", len(reruns), firstSlow)
	}

	// list sees the reruns; trend, the series, the 20 runs alone.
	code, stdout, _ = execute("history", "--history", store, "list", "--label", "test=delay")
	if code != ExitOK || !strings.Contains(stdout, "24 run(s)") {
		t.Errorf("list: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = execute("history", "--history", store, "trend", "publish.p50", "--workload", "memory-latency")
	if code != ExitOK || !strings.Contains(stdout, "20 run(s)") {
		t.Errorf("trend: exit %d\n%s", code, stdout)
	}
}

// TestHistoryCommandErrors: what the history commands refuse, and their
// exit codes.
func TestHistoryCommandErrors(t *testing.T) {
	store := filepath.Join(t.TempDir(), "history.jsonl")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"show", "nope"}, ExitInvalidInput, "no such record: nope"},
		{[]string{"trend", "e2e.p99"}, ExitInvalidInput, "history trend needs --workload"},
		{[]string{"list", "--since", "yesterday"}, ExitInvalidInput, "want a duration"},
		{[]string{"list", "--label", "novalue"}, ExitInvalidInput, "want key=value"},
		{[]string{"compare", "a"}, ExitInvalidInput, "exactly two run ids"},
		{[]string{"import", "does-not-exist"}, ExitInvalidInput, "does-not-exist"},
		{[]string{"check"}, ExitOK, "0 series checked"},
		{[]string{"check", "--rerun", "11"}, ExitInvalidInput, "--rerun must be between 1 and 10"},
		{[]string{"check", "--rerun-broker", "127.0.0.1:9092"}, ExitInvalidInput, "apply only with --rerun"},
		{[]string{"check", "--rerun", "2"}, ExitOK, "0 change point(s) confirmed by reruns"},
		{[]string{"list"}, ExitOK, "0 run(s)"},
	} {
		code, stdout, stderr := execute(append([]string{"history", "--history", store}, tc.args...)...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("history %s: exit %d, want %d and %q\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, stdout, stderr)
		}
	}
	for _, cmd := range []string{"run", "study"} {
		if code, _, stderr := execute(cmd, "x.yaml", "--label", "novalue"); code != ExitInvalidInput || !strings.Contains(stderr, "want key=value") {
			t.Errorf("%s --label novalue: exit %d\n%s", cmd, code, stderr)
		}
	}
	t.Setenv(history.PathEnv, "off")
	if code, _, stderr := execute("history", "list"); code != ExitInvalidInput || !strings.Contains(stderr, "no history") {
		t.Errorf("history list with the history off: exit %d\n%s", code, stderr)
	}
}
