package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkedKind lays nodes out as a broker with dedicated controllers does:
// brokers with a client and a metrics listener, the first three also
// controllers when there are no dedicated ones; controllers 101... with a
// controller listener alone.
type linkedKind struct{ fakeKind }

func (linkedKind) Layout(c *Cluster) []*Node {
	var nodes []*Node
	for i := 1; i <= c.Brokers; i++ {
		n := &Node{ID: i, Roles: []string{"broker"}, Host: LoopbackHost(c.Brokers == 1 && c.Controllers == 0, false, i),
			Ports: map[string]int{"client": 0, "metrics": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		if c.Controllers == 0 && i <= 3 {
			n.Roles = append(n.Roles, "controller")
			n.Ports["controller"] = 0
		}
		nodes = append(nodes, n)
	}
	for j := 1; j <= c.Controllers; j++ {
		nodes = append(nodes, &Node{ID: 100 + j, Roles: []string{"controller"}, Host: LoopbackHost(false, true, j),
			Ports: map[string]int{"controller": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", 100+j))})
	}
	return nodes
}

// linkedCluster lays out a cluster with links without starting it.
func linkedCluster(t *testing.T, brokers, controllers int) *Cluster {
	t.Helper()
	c := &Cluster{Kind: linkedKind{}, StateDir: filepath.Join(t.TempDir(), "kafka-19092"), Port: 19092,
		Brokers: brokers, Controllers: controllers, Links: true}
	if err := c.plan(record{}, true); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLinksPlan: every node reaches every other node's listeners, and the
// clients every broker's client listener, each through its own address;
// each process resolves a node's name to its own link to that node.
func TestLinksPlan(t *testing.T) {
	c := linkedCluster(t, 3, 1) // nodes 1-3 (brokers), 101 (controller)
	links := c.planLinks()
	listen := map[string]bool{}
	byName := map[string]Link{}
	for _, l := range links {
		if listen[l.Listen] {
			t.Errorf("two links listen on %s", l.Listen)
		}
		listen[l.Listen] = true
		byName[l.Name] = l
		if !strings.HasPrefix(l.Listen, "127.3.") {
			t.Errorf("link %s listens on %s, outside 127.3.0.0/16", l.Name, l.Listen)
		}
	}
	// Brokers have a client listener; the controller only a controller
	// one. From 4 nodes to each of 3 brokers' client listener (3x3), to
	// the controller's (3), plus the clients to the brokers (3).
	if len(links) != 15 {
		t.Errorf("%d links; want 15", len(links))
	}
	up := byName["2>101:controller"]
	if up.Upstream != c.Node(101).Addr("controller") || up.From != 2 || up.To != 101 {
		t.Errorf("link 2>101:controller = %+v", up)
	}
	if _, ok := byName["client>101:controller"]; ok {
		t.Error("clients get a link to a controller listener")
	}
	// Node 2 reaches node 1 at its link's address, itself directly.
	if err := c.writeHostsFile(c.Node(2)); err != nil {
		t.Fatal(err)
	}
	hosts, err := os.ReadFile(c.HostsFile(c.Node(2)))
	if err != nil {
		t.Fatal(err)
	}
	to1 := strings.Split(byName["2>1:client"].Listen, ":")[0]
	for _, want := range []string{to1 + " n1.kafka-19092.brokerbench.invalid", c.Node(2).Host + " n2.kafka-19092.brokerbench.invalid", "127.0.0.1 localhost"} {
		if !strings.Contains(string(hosts), want+"\n") {
			t.Errorf("node 2's hosts file lacks %q:\n%s", want, hosts)
		}
	}
	client := c.ClientHosts()
	if got, want := client["n3.kafka-19092.brokerbench.invalid"], strings.Split(byName["client>3:client"].Listen, ":")[0]; got != want {
		t.Errorf("clients resolve node 3 to %s; want its link %s", got, want)
	}
	if b := c.Bootstrap(); len(b) != 3 || b[0] != "n1.kafka-19092.brokerbench.invalid:19092" {
		t.Errorf("bootstrap %v", b)
	}
}

// TestZonesAndSelectors: brokers and controllers spread over zones in
// turn, the clients in zone 1; a selector takes a node's links to its
// peers in both directions.
func TestZonesAndSelectors(t *testing.T) {
	c := linkedCluster(t, 4, 3)
	zone := c.Zones(3)
	want := map[int]int{0: 1, 1: 1, 2: 2, 3: 3, 4: 1, 101: 1, 102: 2, 103: 3}
	for id, z := range want {
		if zone[id] != z {
			t.Errorf("node %d in zone %d; want %d", id, zone[id], z)
		}
	}
	sel := LinkSelector{Node: 2, Peers: []int{0}}
	var got []string
	for _, l := range c.planLinks() {
		if sel.Matches(l) {
			got = append(got, l.Name)
		}
	}
	if strings.Join(got, ",") != "client>2:client" {
		t.Errorf("links of node 2 with the clients: %v", got)
	}
	all := LinkSelector{Node: 101}
	n := 0
	for _, l := range c.planLinks() {
		if all.Matches(l) {
			n++
			if l.From != 101 && l.To != 101 {
				t.Errorf("selector of node 101 took %s", l.Name)
			}
		}
	}
	// To 101 from 6 other nodes; from 101 to 4 brokers' client listeners
	// and 2 controllers' controller listeners.
	if n != 12 {
		t.Errorf("node 101 has %d links; want 12", n)
	}
}

// TestClusterIDNeverLooksLikeAnOption: Kafka's storage tool reads an id
// starting with '-' as an option; ids are drawn until one does not.
func TestClusterIDNeverLooksLikeAnOption(t *testing.T) {
	for range 5000 {
		if id := newClusterID(); id[0] == '-' || len(id) != 22 {
			t.Fatalf("cluster id %q", id)
		}
	}
}
