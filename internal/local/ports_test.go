package local

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
)

// everyAddressKind lays out 3 brokers, each with a "remoting" listener
// on its own address and an "ha" listener on every address, both
// preferring port preferred; and, with proxy, a proxy node whose client
// listener is on every address.
type everyAddressKind struct {
	fakeKind
	preferred int
	proxy     bool
}

func (k everyAddressKind) Layout(c *Cluster) []*Node {
	var nodes []*Node
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, &Node{ID: i, Roles: []string{"broker"}, Host: LoopbackHost(false, false, i), EveryAddress: []string{"ha"},
			Ports: map[string]int{"remoting": k.preferred, "ha": k.preferred}, Dir: filepath.Join(c.StateDir, fmt.Sprint("node-", i))})
	}
	if k.proxy {
		nodes = append(nodes, &Node{ID: 102, Roles: []string{"proxy"}, Host: LoopbackHost(false, true, 2), EveryAddress: []string{"client"},
			Ports: map[string]int{"client": 0}, Dir: filepath.Join(c.StateDir, "node-102")})
	}
	return nodes
}

// TestPlanEveryAddress: a listener bound on every address gets a port
// that no other listener of the cluster has, on any address, and that
// nothing holds on any address; one on a node's own address may share
// its port with another node's. A client port held on another address
// is refused as in use.
func TestPlanEveryAddress(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.1.9:0") // another process's listener on another address
	if err != nil {
		t.Skipf("cannot listen on 127.0.1.9: %v", err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port

	for _, preferred := range []int{heldPort, freePort(t)} {
		c := &Cluster{Kind: everyAddressKind{preferred: preferred}, StateDir: t.TempDir(), Brokers: 3}
		if err := c.plan(record{}, true); err != nil {
			t.Fatal(err)
		}
		owners := map[int][]string{}
		for _, n := range c.Nodes() {
			for name, port := range n.Ports {
				owners[port] = append(owners[port], fmt.Sprintf("node %d %s", n.ID, name))
			}
		}
		for _, n := range c.Nodes() {
			ha := n.Ports["ha"]
			if len(owners[ha]) > 1 {
				t.Errorf("preferring %d: port %d, on every address, is also %v's", preferred, ha, owners[ha])
			}
			if ha == heldPort {
				t.Errorf("node %d's ha listener, on every address, has port %d, which a listener on 127.0.1.9 holds", n.ID, ha)
			}
		}
		if preferred != heldPort && len(owners[preferred]) == 0 {
			t.Errorf("no listener got the free port %d they prefer: %v", preferred, owners)
		}
	}

	c := &Cluster{Kind: everyAddressKind{proxy: true}, StateDir: t.TempDir(), Brokers: 3, Port: heldPort}
	if err := c.plan(record{}, true); !errors.Is(err, ErrPortInUse) {
		t.Errorf("a client port on every address that 127.0.1.9 holds: %v, want ErrPortInUse", err)
	}
}

// freePort returns a port nothing listens on, on any address.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
