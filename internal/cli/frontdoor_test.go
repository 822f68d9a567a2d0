package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestOMBLayoutFromItsRoot runs OMB-format files from the root of a tree in
// OMB's own layout, as OMB users do: payload paths resolve against the
// working directory, producerRate 10000000 runs unthrottled with a note,
// and the OMB JSON leaves out the warmup and carries service time as
// publish latency.
func TestOMBLayoutFromItsRoot(t *testing.T) {
	addr := lazyBroker.Get(t).Addr
	dir := t.TempDir()
	t.Chdir("testdata/omb-layout")
	for _, tc := range []struct {
		workload string
		maxRate  bool
	}{
		{"workloads/1-topic-3-partitions-1kb.yaml", false},
		{"workloads/1-topic-1-partition-1kb-max-rate.yaml", true},
	} {
		t.Run(filepath.Base(tc.workload), func(t *testing.T) {
			out, omb := filepath.Join(dir, "r.json"), filepath.Join(dir, "omb.json")
			code, stdout, stderr := execute("run", tc.workload, "--driver", "driver-kafka/kafka-throughput.yaml", "--broker", addr,
				"--duration", "3s", "--warmup", "1s", "--out", out, "--omb-json", omb, "--quiet", "--max-send-lag", "200ms")
			// What is tested is the layout, not the schedule: on a busy
			// machine 3 s may end a few dozen messages short of the
			// target rate, with every output written.
			if !completed(t, code) {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			wd, _ := os.Getwd()
			if !strings.Contains(stderr, filepath.Join(wd, "payload", "payload-1Kb.data")) {
				t.Errorf("the payload file used is not named:\n%s", stderr)
			}
			res, err := results.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if tc.maxRate != (res.Target == nil) || tc.maxRate != strings.Contains(stdout, "as fast as possible") {
				t.Errorf("max rate %v: target %+v, summary:\n%s", tc.maxRate, res.Target, stdout)
			}
			if res.Measured.ServiceTime.Count == 0 || !strings.Contains(stdout, "service time") {
				t.Errorf("no service time: %+v\n%s", res.Measured.ServiceTime, stdout)
			}
			var o results.OMBResult
			data, _ := os.ReadFile(omb)
			if err := json.Unmarshal(data, &o); err != nil {
				t.Fatal(err)
			}
			measured := 0
			for _, iv := range res.Intervals {
				if iv.Phase == results.Measure {
					measured++
				}
			}
			if len(o.PublishRate) != measured || o.AggregatedPublishLatency99pct != res.Measured.ServiceTime.P99 {
				t.Errorf("OMB series of %d intervals (want %d measured), aggregated publish p99 %v (want service time %v)",
					len(o.PublishRate), measured, o.AggregatedPublishLatency99pct, res.Measured.ServiceTime.P99)
			}
		})
	}
}

// TestInputCaughtBeforeTheRun: bad flags, messages the broker cannot take,
// missing topics and unwritable outputs are input errors (exit 2) found
// before anything is produced.
func TestInputCaughtBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	_ = os.WriteFile(big, []byte("name: big\nmessageSize: 2000000\npayloadPoolSize: 2\nrate: 10\nduration: 2s\n"), 0o644)
	notDir := filepath.Join(dir, "file")
	_ = os.WriteFile(notDir, nil, 0o644)
	quick := "../../workloads/quick.yaml"
	// Cases that must fail before connecting use an address nothing
	// listens on: reaching it would exit 1, not 2.
	nowhere := "127.0.0.1:1"
	// Cases that need the broker's answer name it thus; only they start
	// it (and skip under -short).
	const broker = "test-broker"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"negative rate", []string{"run", quick, "--broker", nowhere, "--rate", "-5"}, `--rate: field "rate": must be between 0`},
		{"negative messages", []string{"run", quick, "--broker", nowhere, "--messages", "-1"}, "--messages"},
		{"tiny duration", []string{"run", quick, "--broker", nowhere, "--duration", "1ns"}, "must be at least 1s"},
		{"zero interval", []string{"run", quick, "--broker", nowhere, "--interval", "0"}, "--interval"},
		{"negative drain timeout", []string{"run", quick, "--broker", nowhere, "--drain-timeout", "-1s"}, "--drain-timeout"},
		{"no nodes", []string{"run", quick, "--broker", nowhere, "--price-per-node-hour", "1", "--nodes", "0"}, "--nodes"},
		{"negative price", []string{"run", quick, "--broker", nowhere, "--price-per-node-hour", "-1"}, "--price-per-node-hour"},
		{"negative steps", []string{"run", quick, "--broker", nowhere, "--find-max-rate", "--max-steps", "-3"}, "--max-steps"},
		{"faults on a given broker", []string{"run", "../../workloads/kill-leader.yaml", "--broker", nowhere}, "faults act on the local clusters"},
		{"too many local brokers", []string{"run", quick, "--local-brokers", "12"}, "--local-brokers: must be between 1 and 9"},
		{"local port 0", []string{"local", "up", "kafka", "--port", "0"}, "--port"},
		{"local port too high", []string{"local", "up", "kafka", "--port", "70000"}, "--port"},
		{"unwritable out", []string{"run", quick, "--broker", nowhere, "-o", filepath.Join(notDir, "r.json")}, "results cannot be written"},
		{"unwritable omb", []string{"run", quick, "--broker", nowhere, "--omb-json", filepath.Join(notDir, "o.json")}, "results cannot be written"},
		{"same out twice", []string{"run", quick, "--broker", nowhere, "-o", filepath.Join(dir, "a.json"), "--omb-json", filepath.Join(dir, "a.json")}, "same file"},
		{"message too large", []string{"run", big, "--broker", broker, "--out", filepath.Join(dir, "big.json")}, "max.request.size"},
		{"missing topic", []string{"run", quick, "--broker", broker, "--topic", "no-such-topic", "--messages", "10", "--out", filepath.Join(dir, "t.json")}, `"no-such-topic" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if i := slices.Index(tc.args, broker); i >= 0 {
				tc.args[i] = lazyBroker.Get(t).Addr
			}
			code, stdout, stderr := execute(tc.args...)
			if code != ExitInvalidInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)\nstdout: %s", code, ExitInvalidInput, stderr, tc.want, stdout)
			}
		})
	}
}

// TestShortMessageLimitRunMeasures: a run that sends its few messages
// within the warmup is still measured, to its last acknowledgement.
func TestShortMessageLimitRunMeasures(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := execute("run", "../../workloads/quick.yaml", "--broker", lazyBroker.Get(t).Addr, "--messages", "300",
		"--out", out, "--quiet", "--max-send-lag", "200ms")
	if !completed(t, code) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Measured
	if m.DurationSeconds <= 0 || m.PublishLatency.Count != 300 || m.Acked != 300 || m.PublishRate <= 0 || len(res.Warnings) == 0 {
		t.Errorf("measured %+v, warnings %q", m, res.Warnings)
	}
}

// TestReportAndCompareInputs: a minimal or foreign results file is a clear
// input error, never a panic; two single results files are compared with
// each other whatever their names, and a partial one is marked.
func TestReportAndCompareInputs(t *testing.T) {
	dir := t.TempDir()
	minimal := filepath.Join(dir, "minimal.json")
	_ = os.WriteFile(minimal, []byte(`{"schema":"brokerbench/results/v1"}`), 0o644)
	for _, args := range [][]string{{"report", minimal, "-o", filepath.Join(dir, "r.html")}, {"compare", minimal, minimal}} {
		if code, _, stderr := execute(args...); code != ExitInvalidInput || !strings.Contains(stderr, "without a workload") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	w := &workload.Workload{Name: "w", MessageSize: 100, Topics: 1, PartitionsPerTopic: 1}
	write := func(name string, rate float64, partial bool) string {
		p := filepath.Join(dir, name)
		r := &results.Run{Schema: results.Schema, ID: name, Workload: w, Partial: partial,
			Measured: results.Aggregate{DurationSeconds: 1, Traffic: results.Traffic{PublishRate: rate, Acked: 1}}}
		if err := results.Write(p, r); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("kafka-4.2.json", 100, false), write("kafka-4.3.json", 150, true)
	code, stdout, stderr := execute("compare", a, b)
	if code != ExitOK || !strings.Contains(stdout, "+50.0%") || !strings.Contains(stdout, "(partial)") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestStudyValidatedAtLoad: mistakes in a study are found by --list, with
// file and line, without a broker; a swept secret appears in no output.
func TestStudyValidatedAtLoad(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile("../../workloads/quick.yaml")
	_ = os.WriteFile(filepath.Join(dir, "quick.yaml"), data, 0o644)
	study := func(extra string) string {
		p := filepath.Join(dir, "s.yaml")
		_ = os.WriteFile(p, []byte("name: s\nworkloads: [quick.yaml]\nsetups:\n  - name: a\n    brokers: 1\n"+extra), 0o644)
		return p
	}
	for _, tc := range []struct{ extra, want string }{
		{"sweep:\n  producer.lingerms: [1]\n", `s.yaml:7: field "lingerms": unsupported Kafka property in producerConfig (did you mean "linger.ms"?)`},
		{"sweep:\n  messageSize: [3]\n", `s.yaml:7: field "messageSize": must be between`},
		{"columns: [publishRat]\n", `s.yaml:6: field "columns": unknown column "publishRat" (did you mean "publishRate"?)`},
	} {
		code, _, stderr := execute("study", study(tc.extra), "--list", "--broker", "127.0.0.1:1")
		if code != ExitInvalidInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %s", tc.extra, code, stderr)
		}
	}
	code, stdout, stderr := execute("study", study("sweep:\n  producer.sasl.jaas.config.password: [hunter2, swordfish]\n  rate: [100]\n"), "--list")
	// Kafka security settings are not supported yet, so the study is
	// rejected; the rejection must not show the secret either.
	if strings.Contains(stdout+stderr, "hunter2") || strings.Contains(stdout+stderr, "swordfish") || !strings.Contains(stdout+stderr, "redacted-1") {
		t.Errorf("exit %d: a secret is shown, or the runs are not told apart:\n%s\n%s", code, stdout, stderr)
	}
}

// TestHelpExamplesNameRealFiles: every brokerbench file an example of
// 'run --help' names exists (OMB's own files are in an OMB checkout).
func TestHelpExamplesNameRealFiles(t *testing.T) {
	_, stdout, _ := execute("run", "--help")
	for _, f := range strings.Fields(stdout) {
		if strings.HasPrefix(f, "workloads/") && strings.HasSuffix(f, ".yaml") && !strings.Contains(f, "1-topic-16") {
			if _, err := os.Stat(filepath.Join("../..", f)); err != nil {
				t.Errorf("run --help names %s: %v", f, err)
			}
		}
	}
	if code, stdout, _ := execute("--version"); code != 0 || !strings.HasPrefix(stdout, "brokerbench ") {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}

// TestPortInUseAdvice: a taken local port is reported with the flag of the
// command at hand.
func TestPortInUseAdvice(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	t.Setenv("BROKERBENCH_CACHE", t.TempDir())
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"run", "../../workloads/quick.yaml", "--local-port", port}, "--local-port"},
		{[]string{"local", "up", "kafka", "--port", port}, "--port"},
	} {
		code, _, stderr := execute(tc.args...)
		if code == ExitOK || !strings.Contains(stderr, "in use by a process brokerbench did not start") || !strings.Contains(stderr, "another port with "+tc.flag+"\n") {
			t.Errorf("%v: exit %d, want advice naming %s:\n%s", tc.args, code, tc.flag, stderr)
		}
	}
}
