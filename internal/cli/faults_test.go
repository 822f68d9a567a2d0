package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/results"
)

// TestKillLeaderLosesNothing runs a real three-broker cluster that the run
// starts itself, kills the leader of the topic's first partition during the
// measurement and restarts it: with replication factor 3, acks=all and
// min.insync.replicas 2, Kafka promises that no acknowledged message is
// lost, and the accounting must show exactly that. The faults are events in
// the results with their target and recovery, and the cluster is whole
// again afterwards.
func TestKillLeaderLosesNothing(t *testing.T) {
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
	defer execute("local", "down", "kafka", "--port", "39692")
	code, stdout, stderr := execute("run", wl, "--local-port", "39692", "--local-brokers", "3", "--quiet", "--out", out)
	if code != ExitOK {
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
	if kill.Error != "" || !strings.Contains(kill.Target, "the leader of") || kill.AtSeconds < 3.9 || kill.AtSeconds > 4.5 || kill.Recovery == nil || kill.Recovery.RateBefore < 1500 {
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
	if !strings.Contains(stdout, "fault at ") || !strings.Contains(res.Environment.LocalCluster, "3 brokers") {
		t.Errorf("summary or environment does not show the fault and the local cluster:\n%s", stdout)
	}
	if code, status, _ := execute("local", "status", "kafka", "--port", "39692"); code != ExitOK || strings.Count(status, "running, pid") != 3 {
		t.Errorf("after the run the cluster is not whole:\n%s", status)
	}
}
