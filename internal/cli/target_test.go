package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/proc"
	"github.com/brokerbench/brokerbench/internal/testbroker"
)

// nodeProcess starts a stand-in for a node's process in dir: a shell
// loop whose command line carries the directory, as a broker's does, and
// its PID file. It is stopped when the test ends, if not before.
func nodeProcess(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "while :; do sleep 0.1; done", dir+string(filepath.Separator))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // errors once the test stopped it
	if err := os.WriteFile(filepath.Join(dir, "node.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// writeKafkaRecord records a Kafka cluster of brokers nodes in stateDir,
// as 'local up' would, its nodes' processes running if running.
func writeKafkaRecord(t *testing.T, stateDir string, brokers int, running bool) []*exec.Cmd {
	t.Helper()
	var nodes []map[string]any
	var procs []*exec.Cmd
	for i := 1; i <= brokers; i++ {
		dir := filepath.Join(stateDir, fmt.Sprintf("node-%d", i))
		if running {
			procs = append(procs, nodeProcess(t, dir))
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		host := fmt.Sprintf("127.0.1.%d", i)
		if brokers == 1 {
			host = "127.0.0.1"
		}
		nodes = append(nodes, map[string]any{"id": i, "roles": []string{"broker", "controller"}, "host": host,
			"ports": map[string]int{"client": 29702, "controller": 40000 + i}, "dir": dir})
	}
	data, _ := json.Marshal(map[string]any{"kind": "kafka", "version": kafka.Version, "id": "x", "brokers": brokers,
		"nodes": nodes, "startedBy": local.StartedByUser})
	if err := os.WriteFile(filepath.Join(stateDir, "cluster.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return procs
}

// TestRunLeavesTheUserClusterAlone: after 'local up kafka' (one broker,
// here stand-in processes), a run of replication factor 3 without
// --local-brokers neither stops nor replaces it: it stops at once, exit 2,
// saying why and what to do. 'local up' of another shape does the same
// over the stopped cluster. No broker is needed: nothing is started.
func TestRunLeavesTheUserClusterAlone(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", dir)
	stateDir := filepath.Join(dir, "kafka-29702")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	nodes := writeKafkaRecord(t, stateDir, 1, true)
	wl := filepath.Join(dir, "rf3.yaml")
	if err := os.WriteFile(wl, []byte("name: rf3\ntopics: 1\npartitionsPerTopic: 3\nreplicationFactor: 3\nmessageSize: 100\nrate: 100\nduration: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	code, stdout, stderr := execute("run", wl, "--local-port", "29702", "--quiet", "--out", filepath.Join(dir, "r.json"))
	if code != ExitInvalidInput {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInvalidInput, stdout, stderr)
	}
	for _, want := range []string{"started by 'local up') cannot take these runs", "has 1 broker; the workload's replication factor 3 needs at least 3",
		"'brokerbench local up kafka --brokers 3 --port 29702 --replace'", "add --replace"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "stopping") || time.Since(began) > 10*time.Second {
		t.Errorf("the run stopped something, or took %s:\n%s", time.Since(began), stderr)
	}
	for _, n := range nodes {
		if !proc.Live(n.Process.Pid) {
			t.Errorf("node process %d was stopped", n.Process.Pid)
		}
	}

	// Stopped, the cluster is still the user's: 'local up' of another
	// size keeps it and its data, saying how to keep or replace it.
	for _, n := range nodes {
		_ = n.Process.Kill()
		_ = n.Wait()
	}
	code, stdout, stderr = execute("local", "up", "kafka", "--port", "29702", "--brokers", "3")
	if code != ExitInvalidInput {
		t.Fatalf("local up over the stopped cluster: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"(1 broker, serving plaintext, release " + kafka.Version + "; stopped, started by 'local up') is not the one asked for (3 brokers",
		"would delete this one and its data", "nothing was changed", "'brokerbench local up kafka --port 29702'", "add --replace"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("local up: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if st := kafka.NewLocal(29702, 1).Status(); st.Brokers != 1 || st.StartedBy != local.StartedByUser {
		t.Errorf("the record changed: %+v", st)
	}
}

// TestStudyChecksTheUserClusterFirst: a study whose setups the running
// cluster 'local up' started does not all fit stops before its first
// run, naming the setup, and leaves the cluster running.
func TestStudyChecksTheUserClusterFirst(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", dir)
	stateDir := filepath.Join(dir, "kafka-29702")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	nodes := writeKafkaRecord(t, stateDir, 3, true)
	data, err := os.ReadFile("../../workloads/quick.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "quick.yaml"), data, 0o644)
	study := filepath.Join(dir, "s.yaml")
	_ = os.WriteFile(study, []byte("name: s\nworkloads: [quick.yaml]\nsetups:\n  - name: three\n    brokers: 3\n  - name: one\n    brokers: 1\n"), 0o644)
	code, stdout, stderr := execute("study", study, "--local-port", "29702", "--out", filepath.Join(dir, "out"))
	if code != ExitInvalidInput || !strings.Contains(stderr, `has 3 brokers; setup "one" asks for 1`) || strings.Contains(stderr, "warming up") {
		t.Fatalf("exit %d, want %d and the setup that does not fit\n%s\n%s", code, ExitInvalidInput, stdout, stderr)
	}
	for _, n := range nodes {
		if !proc.Live(n.Process.Pid) {
			t.Errorf("node process %d was stopped", n.Process.Pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("the study began (%v)", err)
	}
}

// TestRunUsesTheRunningLocalCluster, on a real broker: after 'local up
// kafka', a run without an address goes to that broker as it is (no
// restart, no warm-up) and leaves it running. The run's own verdict is
// the machine's business here.
func TestRunUsesTheRunningLocalCluster(t *testing.T) {
	testbroker.Need(t, testbroker.Kafka)
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", dir)
	defer execute("local", "down", "kafka", "--port", "29703")
	if code, stdout, stderr := execute("local", "up", "kafka", "--port", "29703", "--heap-mb", "512"); code != ExitOK {
		t.Fatalf("local up: exit %d\n%s\n%s", code, stdout, stderr)
	}
	before := kafka.NewLocal(29703, 1).Status()
	if !before.Running || before.StartedBy != local.StartedByUser {
		t.Fatalf("after local up: %+v", before)
	}
	wl := filepath.Join(dir, "small.yaml")
	_ = os.WriteFile(wl, []byte("name: small\ntopics: 1\npartitionsPerTopic: 2\nmessageSize: 100\nrate: 500\nwarmup: 1s\nduration: 2s\n"), 0o644)
	code, stdout, stderr := execute("run", wl, "--local-port", "29703", "--quiet", "--out", filepath.Join(dir, "r.json"))
	if code == ExitInvalidInput || code == ExitInterrupted || !strings.Contains(stderr, "using the running local Apache Kafka") ||
		strings.Contains(stderr, "warming up") || strings.Contains(stderr, "stopping") {
		t.Errorf("exit %d: the run did not use the running broker as it is\n%s\n%s", code, stdout, stderr)
	}
	after := kafka.NewLocal(29703, 1).Status()
	if !after.Running || after.Nodes[0].PID != before.Nodes[0].PID || after.StartedBy != local.StartedByUser {
		t.Errorf("the broker was restarted or stopped, or is no longer the user's: before %+v, after %+v", before.Nodes, after)
	}
}

// TestLocalUpRefusesReleases: a release brokerbench does not run is
// refused before anything is installed or started, saying which it runs.
func TestLocalUpRefusesReleases(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ kind, version, want string }{
		{"kafka", "3.6.2", "Kafka 3.7.0 or newer"},
		{"kafka", "latest", "want major.minor.patch"},
		{"nats", "2.9.25", "nats-server 2.10.0 or newer"},
		{"redis", "7.0.0", "brokerbench runs Redis"},
	} {
		code, _, stderr := execute("local", "up", tc.kind, "--version", tc.version, "--state-dir", dir)
		if code != ExitInvalidInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("local up %s --version %s: exit %d, %s; want exit %d saying %q", tc.kind, tc.version, code, stderr, ExitInvalidInput, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("local up %s --version %s wrote %d files", tc.kind, tc.version, len(entries))
		}
	}
}
