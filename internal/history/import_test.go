package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// testRun is a brokerbench run's results, with a secret in its settings.
func testRun(id string) *results.Run {
	return &results.Run{
		Schema: results.Schema, ID: id, StartedAt: day,
		Environment: results.Environment{BrokerVersion: "4.1.0", BrokerEndpoint: "a:9092,b:9092,c:9092", CPUModel: "EPYC", CPUCores: 2},
		Workload:    &workload.Workload{Name: "quick", Description: "not part of the identity", Topics: 1, PartitionsPerTopic: 3, MessageSize: 100, ProducerRate: 1000},
		Driver: results.Driver{Name: "kafka", Effective: map[string]workload.Properties{
			"producer": {{Key: "acks", Value: "all"}, {Key: "linger.ms", Value: "1"}, {Key: "linger.ms", Value: "5"}},
			"client":   {{Key: "sasl.password", Value: "hunter2hunter2"}},
		}},
		Measured: results.Aggregate{Traffic: results.Traffic{PublishRate: 999, ConsumeRate: 998,
			PublishLatency: metrics.Latency{Count: 10, P50: 1.5, P99: 4}, EndToEndLatency: metrics.Latency{Count: 10, P99: 6}}},
		Intervals: []results.Interval{{Phase: results.Measure, StartSeconds: 0, EndSeconds: 1, Traffic: results.Traffic{PublishRate: 999, ConsumeRate: 998}}},
		Counts:    results.Counts{Sent: 10, Acked: 10, Consumed: 10},
	}
}

func TestFromRun(t *testing.T) {
	a, err := FromRun(testRun("a"), "r.json", map[string]string{"ci": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(a.File) || a.Env.Nodes != 3 || a.Settings["producer/linger.ms"] != "5" || a.Settings["client/sasl.password"] != "********" ||
		a.Figures["publish.p99"] != 4 || a.Figures["e2e.p99"] != 6 || a.Figures["publishRate"] != 999 || a.Labels["ci"] != "1" || a.Verdict != "ok" {
		t.Errorf("record %+v", a)
	}
	if _, ok := a.Figures["service.p99"]; ok {
		t.Error("a latency with no samples has figures")
	}
	// A transactional run's commit latency and abort figures.
	r := testRun("t")
	r.Measured.CommitLatency = &metrics.Latency{Count: 4, P99: 12}
	r.Counts.Transactions, r.Counts.AbortedRead = &results.TransactionCounts{Committed: 3, Aborted: 1}, 2
	if tx, _ := FromRun(r, "r.json", nil); tx.Figures["commit.p99"] != 12 || tx.Figures["abortRate"] != 0.25 || tx.Figures["abortedRead"] != 2 {
		t.Errorf("transactional figures %v", tx.Figures)
	}
	if _, ok := a.Figures["abortRate"]; ok {
		t.Error("a run without transactions has an abort rate")
	}
	// The benchmark is what was asked of the broker: not the workload's
	// description, and not the driver's tuning, which may change along a
	// series; a workload setting makes another benchmark.
	r = testRun("b")
	r.Workload.Description = "reworded"
	r.Driver.Effective["producer"] = workload.Properties{{Key: "linger.ms", Value: "50"}}
	if b, _ := FromRun(r, "r.json", nil); b.Benchmark != a.Benchmark {
		t.Error("the description or a driver setting changed the benchmark")
	}
	r.Workload.MessageSize = 1000
	if b, _ := FromRun(r, "r.json", nil); b.Benchmark == a.Benchmark {
		t.Error("the message size did not change the benchmark")
	}
	// A study's sweep point is a benchmark; its iterations repeat it.
	r = testRun("c")
	r.Study = &results.StudyRun{Name: "s", Setup: "x", Params: []results.Param{{Name: "acks", Value: "1"}}, Iteration: 1}
	c, _ := FromRun(r, "r.json", nil)
	r.Study.Iteration = 2
	if d, _ := FromRun(r, "r.json", nil); d.Benchmark != c.Benchmark || c.Benchmark == a.Benchmark {
		t.Error("an iteration changed the benchmark, or a study's run is the same benchmark as a run alone")
	}
	r.Study.Params[0].Value = "all"
	if d, _ := FromRun(r, "r.json", nil); d.Benchmark == c.Benchmark {
		t.Error("a swept parameter did not change the benchmark")
	}
	// The broker release is not: a series runs across releases.
	r.Study.Params = append(r.Study.Params, results.Param{Name: workload.BrokerVersionParam, Value: "3.9.1"})
	old, _ := FromRun(r, "r.json", nil)
	r.Study.Params[1].Value = "4.3.1"
	if d, _ := FromRun(r, "r.json", nil); d.Benchmark != old.Benchmark {
		t.Error("a swept broker release changed the benchmark")
	}
	r.Study.Params = r.Study.Params[:1]
	if d, _ := FromRun(r, "r.json", nil); d.Benchmark != old.Benchmark {
		t.Error("a run without a swept release is another benchmark than one with")
	}
}

// TestImport imports a study directory holding a results file and its OMB
// output, a file that is no run, and OMB's own result JSON.
func TestImport(t *testing.T) {
	dir := t.TempDir()
	run := testRun("20260301-000000-abcd")
	for path, v := range map[string]any{
		"study/runs/quick.json": run, "study/quick-omb.json": results.OMB(run),
		"study/study.json": map[string]string{"schema": "brokerbench/study/v1"}, "study/other.json": map[string]int{"x": 1},
	} {
		if err := results.Write(filepath.Join(dir, path), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "study/notes.txt"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := Import([]string{filepath.Join(dir, "study"), "testdata/omb-kafka.json"}, map[string]string{"imported": "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Skipped) != 1 || !strings.Contains(im.Skipped[0], "other.json: not OMB results") {
		t.Errorf("skipped %q, want other.json alone", im.Skipped)
	}
	got := map[string]Record{}
	for _, r := range im.Records {
		got[r.Origin+" "+r.Workload] = r
		if r.Labels["imported"] != "yes" {
			t.Errorf("%s: labels %v", r.ID, r.Labels)
		}
	}
	if r := got["brokerbench quick"]; r.ID != run.ID || r.Figures["publish.p99"] != 4 {
		t.Errorf("the results file: %+v", r)
	}
	// brokerbench's OMB output: OMB's publish latency is the service time.
	if r := got["omb quick"]; r.Broker != "kafka" || r.Figures["publishRate"] != 999 || r.Figures["e2e.p99"] != 6 {
		t.Errorf("brokerbench's OMB output: %+v", r)
	}
	r := got["omb 1 topic / 16 partitions / 1Kb"]
	if r.Broker != "kafka" || !strings.HasPrefix(r.ID, "omb-") || r.Figures["service.p99"] != 6.6 || r.Figures["sendLag.p99"] != 0.12 ||
		r.Figures["e2e.p99.9"] != 15 || r.Figures["publishRate"] < 49999 || r.Figures["publishRate"] > 50001 || r.Figures["publishMBps"] < 51 {
		t.Errorf("OMB's result: %+v", r)
	}
	// The same OMB file is the same run.
	again, _ := FromOMB(mustRead(t, "testdata/omb-kafka.json"), "elsewhere.json", time.Now())
	if again.ID != r.ID || again.Benchmark != r.Benchmark {
		t.Errorf("the same file imported twice has ids %s and %s", r.ID, again.ID)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
