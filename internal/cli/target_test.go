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
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestAddressesInAnySectionAreNotLocal: a driver config whose addresses
// are in producer or consumer properties alone (files made for Kafka's
// own tools) goes to those addresses, not to a local broker.
func TestAddressesInAnySectionAreNotLocal(t *testing.T) {
	tgt := newTarget(IO{}, "", localFlags{})
	addr := workload.Properties{{Key: "bootstrap.servers", Value: "10.0.0.5:9093"}}
	for name, dc := range map[string]*workload.DriverConfig{
		"common":   {Name: "kafka", Common: addr},
		"producer": {Name: "kafka", Producer: addr},
		"consumer": {Name: "kafka", Consumer: addr},
	} {
		if tgt.usesLocal(dc) {
			t.Errorf("bootstrap.servers in %sConfig: the run would go to a local broker", name)
		}
	}
	if !tgt.usesLocal(&workload.DriverConfig{Name: "kafka"}) {
		t.Error("a config without addresses must go to the local broker")
	}
}

// recorded describes a recorded local Kafka cluster of brokers nodes in
// /state/kafka-9092, serving listeners (none: plaintext), running or not,
// started by startedBy (a run in progress: runPID).
func recorded(brokers int, running bool, startedBy string, runPID int, listeners ...string) local.Status {
	if len(listeners) == 0 {
		listeners = []string{"plaintext"}
	}
	st := local.Status{Kind: "kafka", Version: "4.3.1", StateDir: "/state/kafka-9092", Running: running, Brokers: brokers,
		Listeners: listeners, StartedBy: startedBy, RunPID: runPID}
	for i := 1; i <= brokers; i++ {
		host := fmt.Sprintf("127.0.1.%d", i)
		ports := map[string]int{"client": 9092}
		for _, l := range listeners[1:] {
			ports[l] = 40000 + i
		}
		st.Nodes = append(st.Nodes, local.NodeStatus{Node: local.Node{ID: i, Host: host, Ports: ports}, Running: running})
		st.Bootstrap = append(st.Bootstrap, fmt.Sprintf("%s:9092", host))
	}
	return st
}

// TestChooseLocal: what runs do about the local cluster recorded for
// their broker kind. A running cluster that fits is used as it is,
// whoever started it; one that 'local up' started and does not fit is
// never stopped or replaced unless --replace, and the refusal says why and
// what to do; brokerbench's own leftovers are replaced.
func TestChooseLocal(t *testing.T) {
	t.Setenv("BROKERBENCH_STATE", "/state") // the records' directory is the default one
	const self = 1000
	rf := func(n int) localNeed {
		return localNeed{kind: "kafka", brokers: n, why: fmt.Sprintf("the workload's replication factor %d", n), listener: "plaintext", self: self}
	}
	with := func(n localNeed, edit func(*localNeed)) localNeed { edit(&n); return n }
	user, run := local.StartedByUser, local.StartedByRun
	for _, tc := range []struct {
		name string
		st   local.Status
		need localNeed
		use  bool
		// refused lists what the refusal must say; none: no refusal.
		refused []string
	}{
		{"nothing recorded: start one", local.Status{Kind: "kafka"}, rf(3), false, nil},
		// The finding: 'local up kafka --brokers 3', then a workload of
		// replication factor 3 and no --local-brokers.
		{"3 brokers 'local up' started, RF 3: used as is", recorded(3, true, user, 0), rf(3), true, nil},
		{"3 brokers, RF 1: used as is", recorded(3, true, user, 0), rf(1), true, nil},
		{"1 broker 'local up' started, RF 3: refused", recorded(1, true, user, 0), rf(3), false,
			[]string{"(1 broker, serving plaintext; running, started by 'local up') cannot take these runs", "has 1 broker; the workload's replication factor 3 needs at least 3",
				"'brokerbench local up kafka --brokers 3 --replace'", "add --replace", "--local-port"}},
		{"1 broker, RF 3, --replace: replaced", recorded(1, true, user, 0), with(rf(3), func(n *localNeed) { n.replace = true }), false, nil},
		{"--local-brokers 1 on 3 running: refused", recorded(3, true, user, 0), with(rf(1), func(n *localNeed) { n.exact, n.why = true, "--local-brokers 1" }), false,
			[]string{"has 3 brokers; --local-brokers 1 asks for 1", "'brokerbench local up kafka --replace'"}},
		// The finding: 'local up kafka --security sasl-ssl', then a
		// plain workload.
		{"sasl_ssl alone, plain driver: refused", recorded(1, true, user, 0, "sasl_ssl"), rf(1), false,
			[]string{"serves sasl_ssl, not the \"plaintext\" listener", "'brokerbench local status kafka'", "--security sasl_ssl,plaintext --replace"}},
		{"sasl_ssl alone, sasl_ssl driver: used as is", recorded(1, true, user, 0, "sasl_ssl"), with(rf(1), func(n *localNeed) { n.listener = "sasl_ssl" }), true, nil},
		{"every listener, ssl driver: used as is", recorded(1, true, user, 0, "plaintext", "ssl"), with(rf(1), func(n *localNeed) { n.listener = "ssl" }), true, nil},
		{"link faults, no link proxy: refused", recorded(3, true, user, 0), with(rf(3), func(n *localNeed) { n.links = true }), false,
			[]string{"does not carry its links through the link proxy", "--brokers 3 --links --replace"}},
		{"a study setup without network on a cluster with links: refused", func() local.Status {
			st := recorded(3, true, user, 0)
			st.LinkProxy = &local.NodeStatus{Running: true}
			return st
		}(), with(rf(3), func(n *localNeed) { n.exact, n.strict, n.why = true, true, `setup "regular"` }), false,
			[]string{`which setup "regular" does not ask for`}},
		{"2 of 3 nodes running: refused", func() local.Status {
			st := recorded(3, false, user, 0)
			st.Nodes[0].Running, st.Nodes[1].Running = true, true
			return st
		}(), rf(1), false, []string{"is not whole: 2 of its 3 nodes run", "'brokerbench local up kafka --brokers 3'"}},
		// The finding: a later 'local up rabbitmq' of one node replaced
		// the stopped 3-node cluster; a run would have done the same.
		{"stopped 3 brokers 'local up' started, RF 1: refused", recorded(3, false, user, 0), rf(1), false,
			[]string{"(3 brokers, serving plaintext; stopped, started by 'local up')", "would delete it and its data", "'brokerbench local up kafka --brokers 3'"}},
		{"stopped, of the shape needed: started again with its data", recorded(3, false, user, 0), rf(3), false, nil},
		{"stopped 1 broker, RF 3: refused", recorded(1, false, user, 0), rf(3), false, []string{"has 1 broker; the workload's replication factor 3 needs at least 3"}},
		{"a record that does not say who started it: kept", recorded(1, true, "", 0), rf(3), false, []string{"did not record by whom"}},
		{"left running by an ended run, fits: used as is", recorded(3, true, run, 0), rf(1), true, nil},
		{"left by an ended run, too small: replaced", recorded(1, true, run, 0), rf(3), false, nil},
		{"left stopped by an ended run: replaced", recorded(3, false, run, 0), rf(1), false, nil},
		{"this process's own: reused or replaced", recorded(1, true, run, self), rf(3), false, nil},
		{"another run in progress, even one that fits: refused", recorded(3, true, run, 4242), rf(1), false,
			[]string{"started by a run in progress (pid 4242)) is in use", "--local-port", "--replace"}},
		{"another run in progress, --replace: taken over", recorded(3, true, run, 4242), with(rf(1), func(n *localNeed) { n.replace = true }), false, nil},
	} {
		use, err := chooseLocal(tc.st, tc.need)
		switch {
		case len(tc.refused) == 0 && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case len(tc.refused) > 0 && err == nil:
			t.Errorf("%s: not refused (use %v)", tc.name, use)
		case err == nil && use != tc.use:
			t.Errorf("%s: use as is %v, want %v", tc.name, use, tc.use)
		}
		for _, want := range tc.refused {
			if err != nil && !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal lacks %q:\n%v", tc.name, want, err)
			}
		}
	}
}

// TestLocalNeed: without --local-brokers a run needs a cluster of at
// least its replication factor (the workload's, else the driver
// config's); with it, exactly that many, which must hold the replication
// factor; a study setup asks for its shape exactly.
func TestLocalNeed(t *testing.T) {
	dc := &workload.DriverConfig{Name: "kafka", ReplicationFactor: 2}
	for _, tc := range []struct {
		name           string
		brokers, rf    int
		setup          string
		want           int
		exact, strict  bool
		refusedMessage string
	}{
		{"the workload's RF", 0, 3, "", 3, false, false, ""},
		{"the driver config's RF", 0, 0, "", 2, false, false, ""},
		{"--local-brokers", 5, 3, "", 5, true, false, ""},
		{"--local-brokers below the RF", 1, 3, "", 0, false, false, "--local-brokers 1 cannot hold the workload's replication factor 3"},
		{"an RF larger than a local cluster", 0, 12, "", 0, false, false, "a local cluster has at most 9"},
		{"a study setup", 3, 1, "regular", 3, true, true, ""},
	} {
		tgt := newTarget(IO{}, "", localFlags{brokersFlag: "local-brokers"})
		w := &workload.Workload{ReplicationFactor: tc.rf}
		if tc.setup != "" {
			tgt.wantSetup(workload.Setup{Name: tc.setup, Brokers: tc.brokers}, w)
		} else {
			tgt.wantCluster(tc.brokers, nil, w)
		}
		need, err := tgt.need(dc)
		if tc.refusedMessage != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusedMessage) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.refusedMessage)
			}
			continue
		}
		if err != nil || need.brokers != tc.want || need.exact != tc.exact || need.strict != tc.strict || need.kind != "kafka" || need.listener != "plaintext" {
			t.Errorf("%s: %+v, %v; want %d brokers, exact %v, strict %v", tc.name, need, err, tc.want, tc.exact, tc.strict)
		}
	}
}

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
			"ports": map[string]int{"client": 39702, "controller": 40000 + i}, "dir": dir})
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
	stateDir := filepath.Join(dir, "kafka-39702")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	nodes := writeKafkaRecord(t, stateDir, 1, true)
	wl := filepath.Join(dir, "rf3.yaml")
	if err := os.WriteFile(wl, []byte("name: rf3\ntopics: 1\npartitionsPerTopic: 3\nreplicationFactor: 3\nmessageSize: 100\nrate: 100\nduration: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	code, stdout, stderr := execute("run", wl, "--local-port", "39702", "--quiet", "--out", filepath.Join(dir, "r.json"))
	if code != ExitInvalidInput {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInvalidInput, stdout, stderr)
	}
	for _, want := range []string{"started by 'local up') cannot take these runs", "has 1 broker; the workload's replication factor 3 needs at least 3",
		"'brokerbench local up kafka --brokers 3 --port 39702 --replace'", "add --replace"} {
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
	code, stdout, stderr = execute("local", "up", "kafka", "--port", "39702", "--brokers", "3")
	if code != ExitInvalidInput {
		t.Fatalf("local up over the stopped cluster: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"(1 broker, serving plaintext; stopped, started by 'local up') is not the one asked for (3 brokers",
		"would delete this one and its data", "nothing was changed", "'brokerbench local up kafka --port 39702'", "add --replace"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("local up: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if st := kafka.NewLocal(39702, 1).Status(); st.Brokers != 1 || st.StartedBy != local.StartedByUser {
		t.Errorf("the record changed: %+v", st)
	}
}

// TestStudyChecksTheUserClusterFirst: a study whose setups the running
// cluster 'local up' started does not all fit stops before its first
// run, naming the setup, and leaves the cluster running.
func TestStudyChecksTheUserClusterFirst(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", dir)
	stateDir := filepath.Join(dir, "kafka-39702")
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
	code, stdout, stderr := execute("study", study, "--local-port", "39702", "--out", filepath.Join(dir, "out"))
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
	defer execute("local", "down", "kafka", "--port", "39703")
	if code, stdout, stderr := execute("local", "up", "kafka", "--port", "39703", "--heap-mb", "512"); code != ExitOK {
		t.Fatalf("local up: exit %d\n%s\n%s", code, stdout, stderr)
	}
	before := kafka.NewLocal(39703, 1).Status()
	if !before.Running || before.StartedBy != local.StartedByUser {
		t.Fatalf("after local up: %+v", before)
	}
	wl := filepath.Join(dir, "small.yaml")
	_ = os.WriteFile(wl, []byte("name: small\ntopics: 1\npartitionsPerTopic: 2\nmessageSize: 100\nrate: 500\nwarmup: 1s\nduration: 2s\n"), 0o644)
	code, stdout, stderr := execute("run", wl, "--local-port", "39703", "--quiet", "--out", filepath.Join(dir, "r.json"))
	if code == ExitInvalidInput || code == ExitInterrupted || !strings.Contains(stderr, "using the running local Apache Kafka") ||
		strings.Contains(stderr, "warming up") || strings.Contains(stderr, "stopping") {
		t.Errorf("exit %d: the run did not use the running broker as it is\n%s\n%s", code, stdout, stderr)
	}
	after := kafka.NewLocal(39703, 1).Status()
	if !after.Running || after.Nodes[0].PID != before.Nodes[0].PID || after.StartedBy != local.StartedByUser {
		t.Errorf("the broker was restarted or stopped, or is no longer the user's: before %+v, after %+v", before.Nodes, after)
	}
}
