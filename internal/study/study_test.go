package study

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

const studyYAML = `name: s
iterations: 2
workloads:
  - name: a
    messageSize: 100
    duration: 1m
    messages: 1000000
  - name: b
    messageSize: 200
    duration: 1m
setups:
  - name: one
    driver: {driver: kafka, producerConfig: {acks: "1"}}
  - name: three
    brokers: 3
    replicationFactor: 3
    only: [a]
sweep:
  partitionsPerTopic: [1, 6]
  producer.linger.ms: ["0", "5"]
quick:
  duration: 3s
  warmup: 0s
  messages: 5000
  iterations: 1
price: {perNodeHour: 2}
`

func load(t *testing.T) *workload.Study {
	t.Helper()
	s, err := workload.ParseStudy("s.yaml", []byte(studyYAML))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlanExpandsEverything(t *testing.T) {
	s := load(t)
	full, err := Plan(s, Full, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// a: 2 setups, b: 1 setup ("three" is only for a); 4 combinations; 2 iterations.
	if len(full) != (2+1)*4*2 {
		t.Fatalf("%d runs, want 24", len(full))
	}
	keys := map[string]bool{}
	for _, r := range full {
		if keys[r.Key] {
			t.Fatalf("duplicate key %s", r.Key)
		}
		keys[r.Key] = true
		if r.Setup.Name == "three" && !strings.Contains(r.Skip, "cluster") {
			t.Errorf("%s: a 3-broker setup must be skipped for the cluster capability, got %q", r.Key, r.Skip)
		}
		if r.Setup.Name == "one" && r.Skip != "" {
			t.Errorf("%s skipped: %s", r.Key, r.Skip)
		}
		if r.Workload.Duration != time.Minute {
			t.Errorf("%s: full scale changed the duration to %s", r.Key, r.Workload.Duration)
		}
	}
	first := full[0]
	if first.Key != "w1-a_one_partitionsPerTopic=1_producer.linger.ms=0_it1" || first.Workload.PartitionsPerTopic != 1 {
		t.Errorf("first run %s, partitions %d", first.Key, first.Workload.PartitionsPerTopic)
	}
	// The sweep's driver settings land in each run's own copy only.
	r := full[2] // partitions=1, linger=5, it1
	if v, _ := r.Driver.Producer.Get("linger.ms"); v != "5" {
		t.Errorf("%s: linger.ms=%q", r.Key, v)
	}
	if v, _ := full[0].Driver.Producer.Get("linger.ms"); v != "0" {
		t.Errorf("%s: linger.ms=%q; runs share driver settings", full[0].Key, v)
	}
	if v, _ := r.Driver.Producer.Get("acks"); v != "1" {
		t.Errorf("%s lost the setup's acks: %q", r.Key, v)
	}

	quick, err := Plan(s, Quick, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(quick) != 3*4 {
		t.Fatalf("quick: %d runs, want 12 (1 iteration)", len(quick))
	}
	for _, r := range quick {
		w := r.Workload
		if w.Duration != 3*time.Second || w.Warmup != 0 {
			t.Errorf("%s: quick durations %s + %s", r.Key, w.Warmup, w.Duration)
		}
		// Only runs with a message limit are capped.
		if (w.Name == "a" && w.MessageLimit != 5000) || (w.Name == "b" && w.MessageLimit != 0) {
			t.Errorf("%s: message limit %d", r.Key, w.MessageLimit)
		}
	}
}

// TestQuickSetNarrowsASweep: a parameter that the quick scale fixes and
// the study sweeps gives one run per fixed value, whose label is the
// value it runs with.
func TestQuickSetNarrowsASweep(t *testing.T) {
	s, err := workload.ParseStudy("s.yaml", []byte("name: s\nworkload: {name: a, messageSize: 100}\nsweep: {messageSize: [100, 1024], producersPerTopic: [1, 2]}\nquick: {set: {messageSize: [512]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Plan(s, Quick, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs; want 2 (messageSize fixed, 2 producer counts)", len(runs))
	}
	for _, r := range runs {
		if r.Workload.MessageSize != 512 || !strings.Contains(r.Key, "messageSize=512") {
			t.Errorf("%s runs %d-byte messages; want 512 under its own label", r.Key, r.Workload.MessageSize)
		}
	}
	full, _ := Plan(s, Full, Target{Brokers: 1})
	if len(full) != 4 {
		t.Errorf("full scale: %d runs; want the whole sweep, 4", len(full))
	}
}

// TestSmokeIsOneShortRunPerSetup: smoke scale keeps every setup, with the
// quick section applied, one iteration and each sweep's first value, and
// runs 1 s without warmup; a message limit is cut with the backlog that
// depends on it.
func TestSmokeIsOneShortRunPerSetup(t *testing.T) {
	s := load(t)
	runs, err := Plan(s, Smoke, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2+1 { // a: 2 setups, b: 1 setup
		t.Fatalf("%d runs, want one per setup, 3", len(runs))
	}
	for _, r := range runs {
		if r.Workload.Warmup != 0 || r.Workload.Duration != time.Second {
			t.Errorf("%s: warmup %s, duration %s; want 0 and 1s", r.Key, r.Workload.Warmup, r.Workload.Duration)
		}
	}
	b, err := workload.ParseStudy("s.yaml", []byte("name: s\nworkload: {name: a, messageSize: 1024, messages: 1000000, consumerBacklogSizeGB: 0.5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err = Plan(b, Smoke, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w := runs[0].Workload; w.MessageLimit != smokeMessages || w.ConsumerBacklogSizeGB*(1<<30) > float64(smokeMessages*1024)+1 {
		t.Errorf("messages %d, backlog %.4f GB: want at most %d messages and a backlog they can fill", w.MessageLimit, w.ConsumerBacklogSizeGB, smokeMessages)
	}
	f, err := workload.ParseStudy("s.yaml", []byte("name: s\nworkload: {name: a, duration: 30s, faults: [{at: 3s, action: kill, node: '1', for: 2s}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if runs, err = Plan(f, Smoke, Target{Brokers: 1}); err != nil || runs[0].Workload.Duration != 7*time.Second {
		t.Errorf("a fault 3s+2s into the run: %v; want 7 s, the fault and 2 s after it", err)
	}
	if _, err := ParseScale("tiny"); err == nil || !strings.Contains(err.Error(), "smoke, quick or full") {
		t.Errorf("unknown scale: %v", err)
	}
}

// TestPlanOnExternalCluster: on a cluster with enough brokers, multi-broker
// setups run instead of being skipped.
func TestPlanOnExternalCluster(t *testing.T) {
	runs, err := Plan(load(t), Full, Target{Brokers: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Skip != "" {
			t.Errorf("%s skipped on an external cluster: %s", r.Key, r.Skip)
		}
	}
}

func TestParseStudyErrors(t *testing.T) {
	cases := map[string]string{
		"name: s\n": "workload",
		"name: s\nworkload: {name: a}\nsweep: {partitions: [1]}\n":       "partitionsPerTopic",
		"name: s\nworkload: {name: a}\nsweep: {messageSize: [big]}\n":    "must be an integer, got \"big\"",
		"name: s\nworkload: {name: a}\nsetups: [{name: x, only: [b]}]\n": `workload "b"`,
		"name: s\nworkload: {name: a, partitions: 3}\n":                  "s.yaml:2",
		"name: s\nworkload: {name: a}\nsetups: [{name: x}, {name: x}]\n": "used twice",
	}
	for text, want := range cases {
		_, err := workload.ParseStudy("s.yaml", []byte(text))
		if err == nil || !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStudy(%q) = %v, want an ErrInvalid naming %q", text, err, want)
		}
	}
}

// TestExecuteResumes runs a study with a fake executor, interrupts it, and
// resumes: finished runs are not made again, skipped ones are recorded.
func TestExecuteResumes(t *testing.T) {
	s := load(t)
	runs, err := Plan(s, Quick, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	made := map[string]int{}
	exec := func(ctx context.Context, r Run, _ string) (*results.Run, error) {
		made[r.Key]++
		if len(made) == 3 {
			cancel() // interrupted during the third run
			return &results.Run{Schema: results.Schema, ID: r.Key, Workload: r.Workload, Partial: true, PartialReason: "interrupted"}, ctx.Err()
		}
		return &results.Run{Schema: results.Schema, ID: r.Key, Workload: r.Workload}, nil
	}
	idx, err := Execute(ctx, s, runs, Options{Dir: dir, Scale: Quick, Exec: exec})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted study returned %v", err)
	}
	if n := slices.IndexFunc(idx.Runs, func(e Entry) bool { return e.Status == Partial }); n < 0 || len(idx.Runs) != 3 {
		t.Fatalf("index after the interruption %+v, want 3 entries, one partial", idx.Runs)
	}
	again := 0
	exec2 := func(ctx context.Context, r Run, _ string) (*results.Run, error) {
		made[r.Key]++
		again++
		return &results.Run{Schema: results.Schema, ID: r.Key, Workload: r.Workload}, nil
	}
	stored := 0
	onStored := func(res *results.Run, path string) {
		if _, err := os.Stat(path); err != nil || res.Study == nil {
			t.Errorf("Stored called with %s before it was written (%v), or without its study", path, err)
		}
		stored++
	}
	idx, err = Execute(context.Background(), s, runs, Options{Dir: dir, Scale: Quick, Exec: exec2, Stored: onStored})
	if err != nil {
		t.Fatal(err)
	}
	if stored != again {
		t.Errorf("Stored called %d times for %d runs made", stored, again)
	}
	skipped := 0
	for _, e := range idx.Runs {
		switch e.Status {
		case Skipped:
			skipped++
		case Done:
			res, err := results.Read(filepath.Join(dir, e.File))
			if err != nil || res.Study == nil || res.Study.Key != e.Key || res.Price == nil || res.Price.PerHour() != 2*float64(res.Study.Brokers) {
				t.Errorf("%s: results %+v, %v", e.Key, res, err)
			}
		default:
			t.Errorf("%s: status %s after resuming", e.Key, e.Status)
		}
	}
	for k, n := range made {
		if n > 2 || (n == 2 && !strings.HasSuffix(k, "it1")) {
			t.Errorf("run %s made %d times", k, n)
		}
	}
	// 12 runs, 4 skipped ("three"), 2 finished before the interruption: the
	// resumed study makes the partial one and the 5 never started.
	if skipped != 4 || again != 12-4-2 {
		t.Errorf("skipped %d, made again %d; want 4 and 6", skipped, again)
	}
	if _, err := os.Stat(filepath.Join(dir, "study.json")); err != nil {
		t.Error(err)
	}
	if _, err := ReadIndex(dir); err != nil {
		t.Error(err)
	}
}

// TestExecuteMakesASetupsRunsTogether: the runs of one setup are made
// back to back (its local cluster starts once), and the index still lists
// them in the plan's order, workload first.
func TestExecuteMakesASetupsRunsTogether(t *testing.T) {
	s := load(t)
	runs, err := Plan(s, Quick, Target{Brokers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var setups []string
	exec := func(_ context.Context, r Run, _ string) (*results.Run, error) {
		setups = append(setups, r.Setup.Name)
		return &results.Run{Schema: results.Schema, ID: r.Key, Workload: r.Workload}, nil
	}
	idx, err := Execute(context.Background(), s, runs, Options{Dir: t.TempDir(), Scale: Quick, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Compact(slices.Clone(setups)); !slices.Equal(got, []string{"one", "three"}) {
		t.Errorf("runs made in setup order %v, want each setup's runs together: one, then three", setups)
	}
	if len(idx.Runs) != len(runs) {
		t.Fatalf("index has %d runs, want %d", len(idx.Runs), len(runs))
	}
	for i, e := range idx.Runs {
		if e.Key != runs[i].Key {
			t.Fatalf("index entry %d is %s, want the plan's %s", i, e.Key, runs[i].Key)
		}
	}
	// The plan interleaves the setups (workload a: one, three; then b), so
	// the index's order differs from the order runs were made in.
	if planned := slices.Compact(func() []string {
		var o []string
		for _, r := range runs {
			o = append(o, r.Setup.Name)
		}
		return o
	}()); len(planned) < 3 {
		t.Fatalf("the plan %v does not interleave setups: the test proves nothing", planned)
	}
}

// TestPlanRedactsSweptSecrets: a swept secret never appears in a run's key
// (its file name) or parameters, and its runs stay distinct.
func TestPlanRedactsSweptSecrets(t *testing.T) {
	s := load(t)
	s.Sweep = append(s.Sweep, workload.SweepParam{Name: "common.ssl.truststore.password", Values: []string{"hunter2", "swordfish"}, File: "s.yaml", Line: 1})
	runs, err := Plan(s, Full, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, r := range runs {
		text := r.Key + fmt.Sprint(r.Params)
		if strings.Contains(text, "hunter2") || strings.Contains(text, "swordfish") {
			t.Fatalf("secret shown: %s", text)
		}
		if keys[r.Key] {
			t.Fatalf("duplicate key %s", r.Key)
		}
		keys[r.Key] = true
	}
	if !strings.Contains(runs[0].Key, "redacted-1") {
		t.Errorf("key %s does not say which secret", runs[0].Key)
	}
}

// TestExecuteRecordsVerdicts: each run that measured has its verdict in
// the index, a disturbed machine's among them.
func TestExecuteRecordsVerdicts(t *testing.T) {
	s := load(t)
	runs, err := Plan(s, Quick, Target{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	exec := func(_ context.Context, r Run, _ string) (*results.Run, error) {
		n++
		res := &results.Run{Schema: results.Schema, ID: r.Key, Workload: r.Workload, Counts: results.Counts{Sent: 10, Acked: 10, Consumed: 10}}
		if n == 1 {
			res.Measured.System = &results.System{OtherCPU: 140, Cores: 2}
		}
		return res, nil
	}
	idx, err := Execute(context.Background(), s, runs, Options{Dir: t.TempDir(), Scale: Quick, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]int{}
	for _, e := range idx.Runs {
		if e.Status == Done {
			verdicts[e.Verdict]++
		} else if e.Verdict != "" {
			t.Errorf("%s %s has verdict %q", e.Key, e.Status, e.Verdict)
		}
	}
	if verdicts["disturbed"] != 1 || verdicts["ok"] != n-1 || len(verdicts) != 2 {
		t.Errorf("verdicts %v of %d runs: want 1 disturbed, the others ok", verdicts, n)
	}
}

// TestBrokerVersionIsASetupDimension: a setup's brokerVersion reaches its
// runs; a sweep of brokerVersion sets each run's, changes neither the
// workload nor the driver, and keeps all its values at smoke scale (it
// is compared as setups are) while other sweeps keep their first.
func TestBrokerVersionIsASetupDimension(t *testing.T) {
	s, err := workload.ParseStudy("s.yaml", []byte(`name: s
workload: {name: a, messageSize: 100}
setups:
  - {name: pinned, brokerVersion: 3.9.1}
  - {name: swept}
sweep: {brokerVersion: [3.8.1, 4.3.1], messageSize: [100, 1024]}
`))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Plan(s, Smoke, Target{Brokers: 1, Local: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprintf("%s:%s:%d", r.Setup.Name, r.Setup.BrokerVersion, r.Workload.MessageSize))
		if len(r.Driver.Common)+len(r.Driver.Producer) > 0 {
			t.Errorf("%s: the release reached the driver settings: %+v", r.Key, r.Driver)
		}
	}
	want := []string{"pinned:3.8.1:100", "pinned:4.3.1:100", "swept:3.8.1:100", "swept:4.3.1:100"}
	if !slices.Equal(got, want) {
		t.Errorf("smoke runs %v, want %v (the sweep's release overrides the setup's)", got, want)
	}
	if runs[0].Key != "pinned_brokerVersion=3.8.1_messageSize=100_it1" {
		t.Errorf("key %q", runs[0].Key)
	}
	one, err := workload.ParseStudy("s.yaml", []byte("name: s\nworkload: {name: a}\nsetups: [{name: old, brokerVersion: 3.9.1}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := Plan(one, Quick, Target{Brokers: 1, Local: true}); err != nil || runs[0].Setup.BrokerVersion != "3.9.1" || runs[0].Skip != "" {
		t.Errorf("setup's release: %+v, %v", runs, err)
	}
	// A cluster given by address runs the release it runs.
	if runs, err := Plan(one, Quick, Target{Brokers: 1}); err != nil || !strings.Contains(runs[0].Skip, "leave out --broker") {
		t.Errorf("a release on a cluster given by address: %+v, %v; want it skipped", runs, err)
	}
}
