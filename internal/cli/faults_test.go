package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/proc"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/testbroker"
)

// TestKillLeaderLosesNothing runs a real three-broker cluster that the run
// starts itself, kills the leader of the topic's first partition during the
// measurement and restarts it: with replication factor 3, acks=all and
// min.insync.replicas 2, Kafka promises that no acknowledged message is
// lost, and the accounting must show exactly that. The faults are events in
// the results with their target and recovery, and the cluster is whole
// again afterwards. The rate this machine sustained around the kill is
// its own: the checks are relative to it.
func TestKillLeaderLosesNothing(t *testing.T) {
	testbroker.Need(t, "a local 3-broker Kafka cluster")
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	wl := filepath.Join(dir, "kill.yaml")
	if err := os.WriteFile(wl, []byte(`name: kill-leader
topics: 1
partitionsPerTopic: 3
messageSize: 100
rate: 2000
warmup: 2s
duration: 10s
faults:
  - {at: 2s, action: kill, node: leader, for: 3s}
driver:
  driver: kafka
  replicationFactor: 3
  topicConfig: {min.insync.replicas: "2"}
  producerConfig: {acks: all, linger.ms: "1"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	defer execute("local", "down", "kafka", "--port", "29692")
	code, stdout, stderr := execute("run", wl, "--local-port", "29692", "--local-brokers", "3", "--quiet", "--out", out)
	if !completed(t, code) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 2 {
		t.Fatalf("fault events %+v: want the kill and the restart", res.Faults)
	}
	kill, restart := res.Faults[0], res.Faults[1]
	if kill.Error != "" || !strings.Contains(kill.Target, "the leader of") || kill.AtSeconds < 3.9 || kill.AtSeconds > 4.5 || kill.Recovery == nil || kill.Recovery.RateBefore <= 0 {
		t.Errorf("kill event %+v (recovery %+v): want the leader killed 2 s into the measurement, with the rate before it", kill, kill.Recovery)
	}
	// acks=all stalls while the dead leader's partitions have none: Kafka
	// notices after its broker session timeout (9 s in KRaft).
	if kill.Recovery != nil && kill.Recovery.UnavailableSeconds < 1 {
		t.Errorf("no stretch without acknowledgements after the kill: %+v", kill.Recovery)
	}
	if restart.Error != "" || !strings.HasPrefix(restart.Action, "restart") || restart.AtSeconds-kill.AtSeconds < 2.9 {
		t.Errorf("restart event %+v: want the same node restarted 3 s later", restart)
	}
	if res.LeaderMoves == nil || *res.LeaderMoves < 1 {
		t.Errorf("leader moves %v: the killed leader's partition must have another leader after the run", res.LeaderMoves)
	}
	c := res.Counts
	if c.Lost != 0 || c.Acked == 0 || c.StoredByBroker == nil || *c.StoredByBroker != c.Acked || c.Duplicated != 0 {
		t.Errorf("accounting after a leader kill with acks=all, RF 3, min.insync 2: %+v", c)
	}
	// The brokers' own view, from their JMX exporters, on the same
	// intervals: messages in while producing, and the under-replicated
	// partitions gauge. (A 3 s kill is shorter than KRaft's 9 s session
	// timeout, so the gauge may stay 0; after a 10 s kill it showed
	// every partition of the restarted node while it caught up.) Messages
	// in must reach a quarter of the highest rate acknowledged in an
	// interval: less than one of the three leaders' share, should a busy
	// machine's exporters not all answer in time.
	var in, acked float64
	urp := false
	for _, iv := range res.Intervals {
		if iv.System == nil || iv.Phase != results.Measure {
			continue
		}
		acked = max(acked, iv.PublishRate)
		in = max(in, iv.System.Broker["kafka_server_messagesin_per_second"])
		_, ok := iv.System.Broker["kafka_server_replicamanager_underreplicatedpartitions"]
		urp = urp || ok
	}
	if acked == 0 || in < acked/4 || !urp {
		t.Errorf("broker metrics: messages in at most %v/s while up to %.0f msg/s were acknowledged, under-replicated partitions read: %v", in, acked, urp)
	}
	if !strings.Contains(stdout, "fault at ") || !strings.Contains(res.Environment.LocalCluster, "3 brokers") {
		t.Errorf("summary or environment does not show the fault and the local cluster:\n%s", stdout)
	}
	if code, status, _ := execute("local", "status", "kafka", "--port", "29692"); code != ExitOK || strings.Count(status, "running, pid") != 3 {
		t.Errorf("after the run the cluster is not whole:\n%s", status)
	}
}

// TestLinkFaults runs a three-broker cluster whose links pass through the
// link proxy (the workload's link faults make the run start it so). A
// 200 ms one-way delay on every link of the leader must add at least one
// round trip, 400 ms, to acks=all publish latency: a message to any
// partition waits for the delayed node, as leader or as in-sync follower.
// Cutting the leader off must stop acknowledgements while the cut lasts,
// and healing both must lose nothing. 'local down' stops the link proxy
// with the nodes.
func TestLinkFaults(t *testing.T) {
	testbroker.Need(t, "a local 3-broker Kafka cluster")
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	wl := filepath.Join(dir, "links.yaml")
	if err := os.WriteFile(wl, []byte(`name: link-faults
topics: 1
partitionsPerTopic: 3
messageSize: 100
rate: 500
warmup: 2s
duration: 12s
faults:
  - {at: 2s, action: delay, node: leader, delay: 200ms, for: 3s}
  - {at: 7s, action: partition, node: leader, for: 3s}
driver:
  driver: kafka
  replicationFactor: 3
  topicConfig: {min.insync.replicas: "2"}
  producerConfig: {acks: all, linger.ms: "1"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	defer execute("local", "down", "kafka", "--port", "29692")
	code, stdout, stderr := execute("run", wl, "--local-port", "29692", "--local-brokers", "3", "--quiet", "--out", out)
	if !completed(t, code) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 4 {
		t.Fatalf("fault events %+v: want delay, heal, partition, heal", res.Faults)
	}
	for _, f := range res.Faults {
		if f.Error != "" {
			t.Errorf("fault %q failed: %s", f.Action, f.Error)
		}
	}
	delay, cut := res.Faults[0], res.Faults[2]
	if cut.Recovery == nil {
		t.Fatalf("the partition has no recovery figures: %+v", cut)
	}
	// The slowest interval while the delay held.
	var slowest float64
	for _, iv := range res.Intervals {
		if iv.StartSeconds >= delay.AtSeconds+0.5 && iv.EndSeconds <= res.Faults[1].AtSeconds {
			slowest = max(slowest, iv.PublishLatency.P50)
		}
	}
	t.Logf("publish p50 up to %.1f ms under the delay; no acknowledgement for %.2f s after the cut", slowest, cut.Recovery.UnavailableSeconds)
	if slowest < 400 {
		t.Errorf("publish p50 reached only %.1f ms under a 200 ms one-way delay on the leader's links; want at least 400 ms (one round trip)", slowest)
	}
	if cut.Recovery.UnavailableSeconds < 1.5 {
		t.Errorf("cutting the leader off for 3 s left acknowledgements flowing: %+v", cut.Recovery)
	}
	c := res.Counts
	if c.Lost != 0 || c.Acked == 0 || c.StoredByBroker == nil || *c.StoredByBroker != c.Acked {
		t.Errorf("accounting after link faults with acks=all, RF 3, min.insync 2: %+v", c)
	}
	code, status, _ := execute("local", "status", "kafka", "--port", "29692", "--json")
	var st local.Status
	if err := json.Unmarshal([]byte(status), &st); code != ExitOK || err != nil || st.LinkProxy == nil || !st.LinkProxy.Running {
		t.Fatalf("status after the run (exit %d, %v): want the cluster with its running link proxy\n%s", code, err, status)
	}
	if code, _, stderr := execute("local", "down", "kafka", "--port", "29692"); code != ExitOK {
		t.Fatalf("local down: exit %d\n%s", code, stderr)
	}
	// local down waits for the proxy to exit; a process that has just
	// exited may show in /proc for a moment while its parent reaps it.
	for deadline := time.Now().Add(5 * time.Second); proc.Live(st.LinkProxy.PID) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if proc.Live(st.LinkProxy.PID) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", st.LinkProxy.PID))
		t.Errorf("the link proxy (pid %d) still runs after local down: %s\n%s", st.LinkProxy.PID, stat, stderr)
	}
}

// TestRabbitMQQuorumQueueSurvivesKill runs a three-node RabbitMQ cluster
// that the run starts itself (one cluster, formed node by node, with one
// epmd), and kills a node of a quorum queue with three replicas during
// the measurement: the queue keeps its majority, the clients connect to
// another node, and no confirmed message may be lost. 'local down' then
// stops every process the cluster started, epmd included.
func TestRabbitMQQuorumQueueSurvivesKill(t *testing.T) {
	testbroker.Need(t, "a local 3-node RabbitMQ cluster")
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	wl := filepath.Join(dir, "kill.yaml")
	if err := os.WriteFile(wl, []byte(`name: quorum-kill
topics: 1
partitionsPerTopic: 2
messageSize: 100
rate: 1000
warmup: 2s
duration: 10s
faults:
  - {at: 2s, action: kill, node: 1, for: 4s}
driver:
  driver: rabbitmq
  replicationFactor: 3
  commonConfig: {queueType: QUORUM, messagePersistence: "true"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := execute("run", wl, "--local-port", "29694", "--local-brokers", "3", "--quiet", "--out", out)
	status := rabbitmq.NewLocal(29694, 3).Status()
	defer execute("local", "down", "rabbitmq", "--port", "29694")
	if !completed(t, code) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) != 2 || res.Faults[0].Error != "" || res.Faults[1].Error != "" {
		t.Fatalf("fault events %+v: want the kill and the restart of node 1", res.Faults)
	}
	// Sends in flight on a connection to the killed node may fail (the
	// producer fails over at once); none acknowledged may be lost.
	if c := res.Counts; c.Lost != 0 || c.UnconfirmedLoss != 0 || c.Acked < 10000 || c.Failed > c.Sent/100 {
		t.Errorf("accounting after killing one of three quorum queue replicas: %+v", c)
	}
	// The nodes' Prometheus plugin: messages received, on the intervals.
	received := 0.0
	for _, iv := range res.Intervals {
		if iv.System == nil || iv.Phase != results.Measure {
			continue
		}
		for k, v := range iv.System.Broker {
			if strings.HasPrefix(k, "rabbitmq_global_messages_received_per_second") {
				received = max(received, v)
			}
		}
	}
	if received < 500 {
		t.Errorf("broker metrics: RabbitMQ received at most %v msg/s by its own count, sent 1000/s", received)
	}
	if !status.Running || len(status.Nodes) != 3 {
		t.Fatalf("after the run the cluster is not whole: %+v", status)
	}
	var pids []int
	for _, n := range status.Nodes {
		pids = append(pids, n.PID)
	}
	if code, _, stderr := execute("local", "down", "rabbitmq", "--port", "29694"); code != ExitOK {
		t.Fatalf("local down: exit %d\n%s", code, stderr)
	}
	for _, n := range status.Nodes {
		if left := proc.WithEnv("BROKERBENCH_NODE=" + n.Dir); len(left) > 0 {
			t.Errorf("processes of node %d still run after local down: %v", n.ID, left)
		}
	}
	for _, pid := range pids {
		if proc.Live(pid) {
			t.Errorf("node process %d still runs after local down", pid)
		}
	}
}

// TestBrokerKilledFromOutsideFailsTheRun: a local broker killed from
// outside in the middle of a run, with no fault of the workload to kill
// it, fails the run (exit 1), and the verdict names the node, whatever
// else the run met on this machine (failed sends, an outage, a disturbed
// machine).
func TestBrokerKilledFromOutsideFailsTheRun(t *testing.T) {
	testbroker.Need(t, "a local NATS server")
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("BROKERBENCH_STATE", state)
	defer execute("local", "down", "nats", "--port", "29641")
	if code, stdout, stderr := execute("local", "up", "nats", "--port", "29641"); code != ExitOK {
		t.Fatalf("local up: exit %d\n%s\n%s", code, stdout, stderr)
	}
	pids, _ := filepath.Glob(filepath.Join(state, "*", "*", "node.pid"))
	if len(pids) != 1 {
		pids, _ = filepath.Glob(filepath.Join(state, "*", "node.pid"))
	}
	if len(pids) != 1 {
		t.Fatalf("node PID files under %s: %q, want one", state, pids)
	}
	b, err := os.ReadFile(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	wl := filepath.Join(dir, "wl.yaml")
	if err := os.WriteFile(wl, []byte("name: killed\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 100\nrate: 500\nwarmup: 1s\nduration: 6s\ndriver:\n  driver: nats\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(context.Background(), []string{"run", wl, "--local-port", "29641", "--out", out, "--drain-timeout", "5s"}, IO{Out: &stdout, Err: &stderr})
	}()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(stderr.String(), "producing:"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start producing in 2 minutes:\n%s", stderr.String())
		}
	}
	time.Sleep(2 * time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("the run did not end within 5 minutes of its broker's kill")
	}
	printed := stdout.String() + stderr.String()
	// How it ended is known only to the process that started it: here,
	// the 'local up' before the run.
	node := fmt.Sprintf("nats node 1 (127.0.0.1, pid %d) ", pid)
	want := "the broker stopped during the run, and no fault of the workload stopped it: " + node
	if code != ExitRunFailed || !strings.Contains(printed, want) {
		t.Fatalf("exit %d, want %d and %q in the output:\n%s", code, ExitRunFailed, want, printed)
	}
	if res, err := results.Read(out); err == nil && !slices.ContainsFunc(res.BrokerStopped, func(s string) bool { return strings.HasPrefix(s, node) }) {
		t.Errorf("results file: brokerStopped %q, want %q", res.BrokerStopped, node)
	}
}
