package kafka_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/proc"
	"github.com/brokerbench/brokerbench/internal/testbroker"
)

// TestClusterLifecycle runs a real three-broker KRaft cluster: every node
// on its own loopback address with its own ports, a node killed and
// restarted, a later Up of another size stopping the nodes left running
// (as after brokerbench itself was killed), and Down stopping all.
func TestClusterLifecycle(t *testing.T) {
	testbroker.Need(t, testbroker.Kafka)
	b, err := testbroker.StartCluster(29592, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c := b.Cluster
	st := c.Status()
	if !st.Running || len(st.Nodes) != 3 || len(st.Bootstrap) != 3 {
		t.Fatalf("status %+v: want 3 running nodes", st)
	}
	hosts := map[string]bool{}
	for _, n := range st.Nodes {
		if hosts[n.Host] || n.Ports["client"] != 29592 || n.Ports["controller"] == 0 || n.Ports["controller"] == 29593 || n.PID == 0 {
			t.Errorf("node %+v: want its own host, client port 29592, an allocated controller port", n)
		}
		hosts[n.Host] = true
	}

	// A killed node is seen as stopped; restarted, the cluster is whole.
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	if st := c.Status(); st.Running || st.Nodes[1].Running || !st.Nodes[0].Running {
		t.Fatalf("after killing node 2: %+v", st)
	}
	if err := c.Restart(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Up(context.Background()); err != nil { // reuses it, waits until ready
		t.Fatal(err)
	}
	if !c.Status().Running {
		t.Fatal("cluster not running after the restart")
	}
	// A paused node still runs.
	if err := c.Node(3).Pause(); err != nil {
		t.Fatal(err)
	}
	if !c.Status().Nodes[2].Running {
		t.Error("a paused node is reported as not running")
	}
	if err := c.Node(3).Resume(); err != nil {
		t.Fatal(err)
	}

	// A new cluster object on the same state, of another size, as a later
	// brokerbench would make after this one was killed: the running nodes
	// are leftovers and are stopped before the new layout starts.
	pids := []int{}
	for _, n := range c.Status().Nodes {
		pids = append(pids, n.PID)
	}
	again := kafka.NewLocal(29592, 1)
	again.StateDir, again.HeapMB, again.Log = c.StateDir, 384, os.Stderr
	st, err = again.Up(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 1 || !st.Running {
		t.Fatalf("single node after the cluster: %+v", st)
	}
	for _, pid := range pids {
		if proc.Live(pid) {
			t.Errorf("node pid %d of the old layout still runs", pid)
		}
	}
	if err := again.Down(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for again.Status().Nodes[0].Running && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if again.Status().Nodes[0].Running {
		t.Error("node still running after Down")
	}
}
