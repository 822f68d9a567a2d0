package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// storeKind lays out a metadata store (node 101) before its brokers, as
// Pulsar's cluster does: the store starts first and serves before the
// brokers start, the cluster's one-off step runs once it serves, and it
// stops once the brokers have. Its store's process writes, when told to
// stop, which brokers' PID files are still there; a broker takes half a
// second to stop.
type storeKind struct {
	fakeKind
	mu          *sync.Mutex
	initialized *[]string // the step's calls: node id, and the nodes running
}

func (storeKind) Layout(c *Cluster) []*Node {
	nodes := []*Node{{ID: 101, Roles: []string{"store"}, Host: LoopbackHost(false, true, 1),
		Ports: map[string]int{"store": 0}, Dir: filepath.Join(c.StateDir, "node-101")}}
	return append(nodes, fakeKind{}.Layout(c)...)
}

func (storeKind) Command(c *Cluster, n *Node) []string {
	if !n.HasRole("store") { // a broker takes half a second to stop
		return []string{"sh", "-c", `trap 'sleep 0.5; exit 0' TERM; while :; do sleep 0.1; done`, n.Marker()}
	}
	pidFiles := filepath.Join(c.StateDir, "node-[0-9]", "node.pid")
	return []string{"sh", "-c", fmt.Sprintf(`trap 'ls %s > %s 2>/dev/null; exit 0' TERM; while :; do sleep 0.1; done`,
		pidFiles, filepath.Join(n.Dir, "brokers-at-stop")), n.Marker()}
}

func (storeKind) NodeReady(context.Context, *Cluster, *Node) error { return nil }

func (k storeKind) Initialize(_ context.Context, c *Cluster, n *Node) error {
	var running []string
	for _, m := range c.Nodes() {
		if _, ok := m.PID(); ok {
			running = append(running, fmt.Sprint(m.ID))
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	*k.initialized = append(*k.initialized, fmt.Sprintf("%d after %s", n.ID, strings.Join(running, ",")))
	return nil
}

func (storeKind) StopsLast(n *Node) bool { return n.HasRole("store") }

// TestStoreFirstAndLast: a new cluster's nodes start in layout order, the
// kind's step called after each (the store's call seeing the store alone
// running), and not again when the cluster starts again with its data;
// the store stops once every broker has stopped; and a cluster started
// again keeps the ports it recorded.
func TestStoreFirstAndLast(t *testing.T) {
	var calls []string
	kind := storeKind{mu: &sync.Mutex{}, initialized: &calls}
	dir := t.TempDir()
	c := &Cluster{Kind: kind, StateDir: dir, Brokers: 2, StartedBy: StartedByUser, Log: &syncBuffer{}}
	ctx := context.Background()
	if _, err := c.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"101 after 101", "1 after 101,1", "2 after 101,1,2"}; !slices.Equal(calls, want) {
		t.Errorf("the step was called %q, want %q", calls, want)
	}
	port := c.Node(101).Ports["store"]
	if err := c.Down(); err != nil {
		t.Fatal(err)
	}
	atStop, err := os.ReadFile(filepath.Join(dir, "node-101", "brokers-at-stop"))
	if err != nil {
		t.Fatalf("the store did not say what ran when it stopped: %v", err)
	}
	if len(strings.TrimSpace(string(atStop))) > 0 {
		t.Errorf("brokers' PID files when the store was told to stop: %s", atStop)
	}

	again := &Cluster{Kind: kind, StateDir: dir, Brokers: 2, StartedBy: StartedByUser, Log: &syncBuffer{}}
	if _, err := again.Up(ctx); err != nil {
		t.Fatal(err)
	}
	defer again.Down()
	if len(calls) != 3 {
		t.Errorf("the step ran again for a cluster started with its data: %q", calls)
	}
	if got := again.Node(101).Ports["store"]; got != port {
		t.Errorf("the store's port moved from %d to %d when the cluster started again", port, got)
	}
}

// restartKind is storeKind whose nodes start one after another also when
// the cluster starts again with its data; NodeReady records, for each
// node, which nodes run when it is asked.
type restartKind struct {
	storeKind
	ready *[]string
}

func (k restartKind) NodeReady(_ context.Context, c *Cluster, n *Node) error {
	var running []string
	for _, m := range c.Nodes() {
		if _, ok := m.PID(); ok {
			running = append(running, fmt.Sprint(m.ID))
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	*k.ready = append(*k.ready, fmt.Sprintf("%d after %s", n.ID, strings.Join(running, ",")))
	return nil
}

func (restartKind) RestartsInOrder() bool { return true }

// TestRestartInOrder: a kind that restarts in order has its nodes start
// one after another, each asked whether it serves before the next
// starts, when the cluster starts again with its data too.
func TestRestartInOrder(t *testing.T) {
	var calls, ready []string
	kind := restartKind{storeKind: storeKind{mu: &sync.Mutex{}, initialized: &calls}, ready: &ready}
	dir := t.TempDir()
	ctx := context.Background()
	for range 2 {
		c := &Cluster{Kind: kind, StateDir: dir, Brokers: 2, StartedBy: StartedByUser, Log: &syncBuffer{}}
		if _, err := c.Up(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Down(); err != nil {
			t.Fatal(err)
		}
	}
	inOrder := []string{"101 after 101", "1 after 101,1", "2 after 101,1,2"}
	if want := append(slices.Clone(inOrder), inOrder...); !slices.Equal(ready, want) {
		t.Errorf("the nodes were asked whether they serve %q, want %q", ready, want)
	}
	if len(calls) != 3 {
		t.Errorf("the new cluster's step ran %q: want it once for each node, and not again", calls)
	}
}
