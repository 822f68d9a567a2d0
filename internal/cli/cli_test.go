package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/brokerbench/brokerbench/internal/brokers/all"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/study"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

var lazyBroker = testbroker.NewLazy(29292)

// subprocessArgs, when set in the environment (arguments separated by
// newlines), makes the test binary run brokerbench with them instead of the
// tests: for tests that must kill a run outright.
const subprocessArgs = "BROKERBENCH_TEST_SUBPROCESS_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(subprocessArgs); args != "" {
		os.Exit(Execute(context.Background(), strings.Split(args, "\n"), IO{Out: os.Stdout, Err: os.Stderr}))
	}
	// A local cluster with links starts its link proxy as this
	// executable's "local link-proxy": in tests, the test binary.
	// Local workers (--local-workers, a study's workers) are this
	// executable's "worker": in tests, the test binary.
	if len(os.Args) > 2 && (os.Args[1] == "local" && os.Args[2] == "link-proxy" || os.Args[1] == "worker") {
		os.Exit(Execute(context.Background(), os.Args[1:], IO{Out: os.Stdout, Err: os.Stderr}))
	}
	// Runs made by the tests record their topics in a registry of their
	// own, not the user's.
	dir, err := os.MkdirTemp("", "brokerbench-test-registry-")
	if err != nil {
		panic(err)
	}
	os.Setenv(engine.RegistryEnv, dir)
	// and a history of their own.
	os.Setenv(history.PathEnv, filepath.Join(dir, history.FileName))
	lazyBroker.Main(m, func() { os.RemoveAll(dir) })
}

func execute(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), args, IO{Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// TestOMBFilesRunUnchanged runs an OMB workload file and an OMB Kafka driver
// file as they are, with only the durations overridden, and checks both
// results files.
func TestOMBFilesRunUnchanged(t *testing.T) {
	dir := t.TempDir()
	out, omb := filepath.Join(dir, "r.json"), filepath.Join(dir, "omb.json")
	code, stdout, stderr := execute("run", "../workload/testdata/omb-1-topic-6-partitions-100b.yaml",
		"--driver", "../workload/testdata/omb-kafka-driver.yaml", "--broker", lazyBroker.Get(t).Addr,
		"--duration", "5s", "--warmup", "1s", "--out", out, "--omb-json", omb, "--quiet",
		// Under the race detector, with the broker on the same two cores,
		// the producer goroutine is sometimes scheduled tens of ms late;
		// the 10 ms default is for real runs (TestSendLagLimit covers it).
		"--max-send-lag", "200ms")
	// What is tested is that OMB's files run as they are; a busy machine
	// may decide the rate.
	if !completed(t, code) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "accounting: sent") || (code == ExitOK && !strings.Contains(stdout, "target rate held")) {
		t.Errorf("summary missing:\n%s", stdout)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload.Format != "omb" || res.Driver.Format != "omb" || res.Driver.Name != "kafka" || res.Environment.BrokerVersion == "" ||
		res.Environment.CPUCores == 0 || res.Counts.Acked == 0 || res.Counts.Acked != res.Counts.Consumed {
		t.Errorf("results: workload %+v driver %+v env %+v counts %+v", res.Workload.Format, res.Driver, res.Environment, res.Counts)
	}
	if v, _ := res.Driver.Effective["producer"].Get("batch.size"); v != "1048576" {
		t.Errorf("driver file's batch.size not in effect: %q", v)
	}
	var o map[string]any
	data, _ := os.ReadFile(omb)
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"publishRate", "consumeRate", "backlog", "publishLatency50pct", "endToEndLatency99pct", "aggregatedPublishLatency99pct", "aggregatedEndToEndLatencyMax", "publishDelayLatency99pct"} {
		if _, ok := o[k]; !ok {
			t.Errorf("OMB result lacks %s", k)
		}
	}
	// One rate an interval measured: 5 of 1 s, or fewer when a busy
	// machine sampled late and an interval ran longer.
	measured := 0
	for _, iv := range res.Intervals {
		if iv.Phase == results.Measure {
			measured++
		}
	}
	if rate, _ := o["publishRate"].([]any); len(rate) != measured || measured == 0 {
		t.Errorf("OMB publishRate has %d intervals, the results %d measured", len(rate), measured)
	}
}

// TestFindMaxRate runs a short search and checks that the reported rate is
// the highest held step and that the stored run is that step's.
func TestFindMaxRate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := execute("run", "../../workloads/max-rate-100b.yaml", "--broker", lazyBroker.Get(t).Addr,
		"--find-max-rate", "--slo", "p99<500ms", "--max-steps", "3", "--warmup", "1s", "--duration", "2s",
		"--max-send-lag", "200ms", "--out", out)
	res, err := results.Read(out)
	if err == nil && code == ExitDisturbed && res.MaxRate != nil && res.MaxRate.NotMeasurable != "" {
		// Other processes took the machine step after step: the search
		// says so instead of giving a number (its mechanics are tested in
		// internal/maxrate, where time is controlled).
		if !strings.Contains(stdout, "NOT MEASURABLE") {
			t.Errorf("a search not measurable does not say so:\n%s", stdout)
		}
		t.Logf("machine disturbed: %s", res.MaxRate.NotMeasurable)
		return
	}
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if err != nil {
		t.Fatal(err)
	}
	mr := res.MaxRate
	// The warm-up, the probe, 3 steps, and repeats of the found rate and
	// of the failed one above it, if any.
	kinds := map[results.StepKind]int{}
	best := 0.0
	for _, s := range mrSteps(mr) {
		kinds[s.Kind]++
		if s.Kind == results.StepSearch && s.Held && s.TargetRate > best {
			best = s.TargetRate
		}
	}
	if mr == nil || kinds[results.StepWarmup] != 1 || kinds[results.StepProbe] != 1 || kinds[results.StepSearch] != 3 || kinds[results.StepRepeat] < 1 || mr.Ceiling <= 0 {
		t.Fatalf("search %+v: want the warm-up, the probe, 3 steps and repeats", mr)
	}
	if rp := mr.Repeatability; rp == nil || rp.Rate != best || rp.Runs != 2 || !strings.Contains(stdout, "repeatability:") {
		t.Fatalf("repeatability %+v: want %.0f run twice, stated in the summary", rp, best)
	}
	if best == 0 || mr.Rate != best || res.Target == nil || res.Target.Rate != best || !res.Target.Held {
		t.Fatalf("reported %.0f, best held step %.0f, stored run's target %+v", mr.Rate, best, res.Target)
	}
	if !strings.Contains(stdout, "MAX SUSTAINABLE RATE") {
		t.Errorf("summary lacks the result:\n%s", stdout)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("name: x\npartitionsPerTopc: 3\n"), 0o644)
	badProp := filepath.Join(dir, "badprop.yaml")
	_ = os.WriteFile(badProp, []byte("name: x\nduration: 1s\ndriver:\n  driver: kafka\n  producerConfig:\n    lingerms: 1\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		// Invalid workload: exit 2 with file, line and field.
		{"invalid workload", []string{"run", bad}, ExitInvalidInput, "bad.yaml:2"},
		// Unsupported Kafka property: exit 2, located.
		{"unsupported property", []string{"run", badProp, "--broker", "127.0.0.1:1"}, ExitInvalidInput, "badprop.yaml:6"},
		// Missing file.
		{"missing file", []string{"run", filepath.Join(dir, "none.yaml")}, ExitInvalidInput, "none.yaml"},
		// Wrong number of arguments.
		{"no workload", []string{"run"}, ExitInvalidInput, "exactly one workload"},
		// Unknown flag.
		{"unknown flag", []string{"run", bad, "--bogus"}, ExitInvalidInput, "bogus"},
		{"slo without search", []string{"run", "../../workloads/quick.yaml", "--slo", "p99<5ms"}, ExitInvalidInput, "--find-max-rate"},
		{"bad slo", []string{"run", "../../workloads/quick.yaml", "--find-max-rate", "--slo", "p98<5ms"}, ExitInvalidInput, "p98"},
		// Unreachable broker: the run fails, exit 1.
		{"unreachable", []string{"run", "../workload/testdata/omb-1-topic-6-partitions-100b.yaml", "--broker", "127.0.0.1:1", "--duration", "1s"}, ExitRunFailed, "127.0.0.1:1"},
		// A broker we do not manage.
		{"local wrong broker", []string{"local", "up", "activemq"}, ExitInvalidInput, "kafka"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr, tc.want)
			}
		})
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"local", "up", "--help"}, {"local", "down", "--help"}, {"local", "status", "--help"}, {"version", "--help"}} {
		code, stdout, _ := execute(args...)
		if code != 0 || !strings.Contains(stdout, "Examples:") {
			t.Errorf("%v: exit %d, no examples:\n%s", args, code, stdout)
		}
	}
}

// otherBrokers reports whether a study has setups for brokers other than
// Kafka, which the one Kafka broker given by address cannot serve.
func otherBrokers(t *testing.T, file string) bool {
	t.Helper()
	s, err := workload.LoadStudy(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range s.Setups {
		if st.Driver != nil && st.Driver.Name != "kafka" {
			return true
		}
	}
	return false
}

// TestBuiltInStudiesSmoke runs every built-in reference study at smoke
// scale (one short run per setup) against the single test broker given by
// address: the runs that fit on it must all be done, the others skipped
// with a reason (a larger cluster, faults that need a local cluster, a
// missing capability), and each study must write its HTML report with
// Markdown, CSV and SVG exports. 'make studies' runs them at quick scale on
// the local clusters brokerbench starts, where only missing capabilities
// skip a run.
func TestBuiltInStudiesSmoke(t *testing.T) {
	files, err := filepath.Glob("../../studies/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("studies: %v %v", files, err)
	}
	for _, f := range files {
		switch filepath.Base(f) {
		case "demo.yaml", "resilience.yaml", "kafka-security.yaml", "kafka-versions.yaml":
			// make demo runs the first, make studies the others: faults
			// need local clusters, secured setups the credentials of a
			// local cluster, and releases a local cluster of each, not
			// the one plain Kafka broker given here.
			continue
		}
		if otherBrokers(t, f) {
			continue // make studies runs them on local brokers of each kind
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := execute("study", f, "--scale", "smoke", "--out", out, "--broker", lazyBroker.Get(t).Addr)
			if code != ExitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			idx, err := study.ReadIndex(out)
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, e := range idx.Runs {
				switch e.Status {
				case study.Done:
					done++
					res, err := results.Read(filepath.Join(out, e.File))
					if err != nil {
						t.Fatal(err)
					}
					if res.Counts.Lost != 0 || (res.Workload.Producers() > 0 && res.Counts.Acked == 0) {
						t.Errorf("%s: accounting %+v", e.Key, res.Counts)
					}
				case study.Skipped:
					if !strings.Contains(e.Reason, "capability") && !strings.Contains(e.Reason, "leave out --broker") && !strings.Contains(e.Reason, "leave --broker out") {
						t.Errorf("%s skipped without saying what it needs: %q", e.Key, e.Reason)
					}
				default:
					t.Errorf("%s: %s %s", e.Key, e.Status, e.Reason)
				}
			}
			if done == 0 {
				t.Fatal("no run was made")
			}
			html, err := os.ReadFile(filepath.Join(out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(html), "<svg") || strings.Contains(string(html), "NaN") {
				t.Error("report has no chart, or shows NaN")
			}
			for _, side := range []string{"summary.md", "summary.csv", "publish-rate.svg"} {
				if _, err := os.Stat(filepath.Join(out, "report-files", side)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func mrSteps(mr *results.MaxRateSearch) []results.RateStep {
	if mr == nil {
		return nil
	}
	return mr.Steps
}

// TestExitCodeOfEveryKind: every kind of failure the engine returns has
// its exit code, the outermost kind wins, flag mistakes are invalid
// input, and another process's exit status is kept as it is.
func TestExitCodeOfEveryKind(t *testing.T) {
	cause := errors.New("cause")
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, ExitOK},
		{cause, ExitRunFailed},
		{fmt.Errorf("load: %w", workload.ErrInvalid), ExitInvalidInput},
		{usageError{cause}, ExitInvalidInput},
		{engine.WithKind(engine.RunFailed, cause), ExitRunFailed},
		{engine.WithKind(engine.BadInput, cause), ExitInvalidInput},
		{engine.WithKind(engine.Interrupted, cause), ExitInterrupted},
		{engine.WithKind(engine.TargetNotHeld, cause), ExitTargetNotHeld},
		{engine.WithKind(engine.AccountingMismatch, cause), ExitAccountingFail},
		{engine.WithKind(engine.LoadGeneratorBound, cause), ExitLoadGeneratorBound},
		{engine.WithKind(engine.Disturbed, cause), ExitDisturbed},
		// The outermost kind is the error's.
		{engine.WithKind(engine.Interrupted, engine.WithKind(engine.BadInput, cause)), ExitInterrupted},
		{engine.WithKind(engine.RunFailed, usageError{cause}), ExitRunFailed},
		{&engine.ExitStatus{Code: 6, Err: cause}, 6},
	} {
		if got := exitCode(tc.err); got != tc.code {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}
