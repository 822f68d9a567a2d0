// Package localfaults turns a workload's fault schedule into faults on
// the nodes and links of a local cluster: kill, pause, delay, cut. Package
// faults runs them and measures what each cost; package local gives the
// means (nodes by PID, shaped links) and knows nothing of schedules.
package localfaults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Finder finds the nodes faults aim at by role: a driver.Placement,
// ByHost of a driver.HostPlacement, or Unplaced of a driver.Unplaced.
type Finder interface {
	// Leader returns the node leading a topic's partition.
	Leader(ctx context.Context, topic string, partition int) (int, error)
	// Controller returns the active controller node.
	Controller(ctx context.Context) (int, error)
}

// ByHost is the Finder of a driver that names hosts rather than node ids:
// the broker node of nodes on the host it names.
func ByHost(nodes []*local.Node, hp driver.HostPlacement) Finder {
	return byHost{nodes: nodes, hp: hp}
}

type byHost struct {
	nodes []*local.Node
	hp    driver.HostPlacement
}

func (b byHost) Leader(ctx context.Context, topic string, partition int) (int, error) {
	host, err := b.hp.LeaderHost(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	return b.node(host)
}

func (b byHost) Controller(ctx context.Context) (int, error) {
	host, err := b.hp.ControllerHost(ctx)
	if err != nil {
		return 0, err
	}
	return b.node(host)
}

// node returns the id of the broker node on host.
func (b byHost) node(host string) (int, error) {
	for _, n := range b.nodes {
		if n.Host == host && n.HasRole("broker") {
			return n.ID, nil
		}
	}
	return 0, fmt.Errorf("no broker node of the local cluster is on %s, the host the broker named", host)
}

// Unplaced is the Finder of a driver that names no node for a role, and
// says why: Schedule refuses faults aimed by role with its reason.
type Unplaced string

// Leader implements Finder: an error, the reason.
func (u Unplaced) Leader(context.Context, string, int) (int, error) { return 0, errors.New(string(u)) }

// Controller implements Finder: an error, the reason.
func (u Unplaced) Controller(context.Context) (int, error) { return 0, errors.New(string(u)) }

// Schedule turns a workload's fault schedule into faults on c's nodes.
// place finds the nodes aimed at by role (leader, controller); seed picks
// random nodes, so a schedule picks the same nodes again. A kill or pause
// with a duration becomes two faults: the action, and its undo on the same
// node.
func Schedule(c *local.Cluster, schedule []workload.Fault, place Finder, seed uint64) ([]faults.Scheduled, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6661756c7473))
	var out []faults.Scheduled
	for i, spec := range schedule {
		if id := spec.NodeID(); id != 0 && c.Node(id) == nil {
			return nil, fmt.Errorf("fault %q: the cluster has no node %d", spec, id)
		}
		if spec.OnLinks() && !c.Linked() {
			return nil, fmt.Errorf("fault %q acts on links, and this cluster was started without its link proxy: start it with --links (brokerbench starts it so for workloads with link faults)", spec)
		}
		if id, err := strconv.Atoi(spec.Peer); err == nil && c.Node(id) == nil {
			return nil, fmt.Errorf("fault %q: the cluster has no node %d", spec, id)
		}
		if byRole := spec.Node == workload.NodeLeader || spec.Node == workload.NodeController; byRole {
			if why, ok := place.(Unplaced); ok {
				return nil, fmt.Errorf("fault %q: %s", spec, why)
			}
			if place == nil {
				return nil, fmt.Errorf("fault %q: this driver cannot tell which node is the %s", spec, spec.Node)
			}
		}
		group := fmt.Sprintf("fault-%d", i+1)
		f := &nodeFault{c: c, spec: spec, group: group, place: place, rng: rng, target: &resolved{}}
		out = append(out, faults.Scheduled{At: spec.At, Fault: f})
		if spec.For > 0 {
			undo := &nodeFault{c: c, spec: spec, group: group, undo: true, target: f.target}
			out = append(out, faults.Scheduled{At: spec.At + spec.For, Fault: undo})
		}
	}
	return out, nil
}

// resolved is the node a fault acted on, shared with its undo.
type resolved struct {
	mu sync.Mutex
	id int
}

// nodeFault is one action on a node of a local cluster, or on its links.
type nodeFault struct {
	c      *local.Cluster
	spec   workload.Fault
	group  string // the link shapes of a link fault
	undo   bool   // restart, resume or heal the node the spec acted on
	place  Finder
	rng    *rand.Rand
	target *resolved
}

func (f *nodeFault) String() string {
	switch {
	case f.spec.OnLinks() && f.undo:
		return "heal " + f.spec.Links()
	case f.spec.OnLinks():
		return f.spec.Action + " " + f.spec.Links()
	case !f.undo:
		return f.spec.Action + " " + nodeWords(f.spec.Node)
	}
	return map[string]string{workload.FaultKill: workload.FaultRestart, workload.FaultPause: workload.FaultResume}[f.spec.Action] +
		" the node of '" + f.spec.Action + " " + nodeWords(f.spec.Node) + "'"
}

func nodeWords(n string) string {
	if _, err := strconv.Atoi(n); err == nil {
		return "node " + n
	}
	return n
}

// Apply implements faults.Fault.
func (f *nodeFault) Apply(ctx context.Context, topics []string) (string, error) {
	f.target.mu.Lock()
	defer f.target.mu.Unlock()
	if f.undo {
		if f.target.id == 0 {
			return "", errors.New("nothing to undo: the fault it undoes did not act")
		}
		return f.act(ctx, f.target.id, "")
	}
	id, why, err := f.resolve(ctx, topics)
	if err != nil {
		return "", err
	}
	target, err := f.act(ctx, id, why)
	if err == nil {
		f.target.id = id
	}
	return target, err
}

// resolve finds the node the fault aims at, and says why it is that one.
func (f *nodeFault) resolve(ctx context.Context, topics []string) (int, string, error) {
	switch f.spec.Node {
	case workload.NodeLeader:
		if len(topics) == 0 {
			return 0, "", errors.New("the run has no topic to find a leader of")
		}
		id, err := f.place.Leader(ctx, topics[0], 0)
		return id, fmt.Sprintf("the leader of %s partition 0", topics[0]), err
	case workload.NodeController:
		id, err := f.place.Controller(ctx)
		return id, "the active controller", err
	case workload.NodeRandom:
		var brokers []int
		for _, n := range f.c.Nodes() {
			if n.HasRole("broker") {
				brokers = append(brokers, n.ID)
			}
		}
		return brokers[f.rng.IntN(len(brokers))], "chosen at random", nil
	}
	return f.spec.NodeID(), "", nil
}

// act applies the action (or its undo) to node id.
func (f *nodeFault) act(ctx context.Context, id int, why string) (string, error) {
	n := f.c.Node(id)
	if n == nil {
		return "", fmt.Errorf("the cluster has no node %d", id)
	}
	target := fmt.Sprintf("node %d (%s)", id, n.Host)
	if why != "" {
		target += ", " + why
	}
	if f.spec.OnLinks() {
		return target, f.shapeLinks(id)
	}
	action := f.spec.Action
	if f.undo {
		action = map[string]string{workload.FaultKill: workload.FaultRestart, workload.FaultPause: workload.FaultResume}[action]
	}
	var err error
	switch action {
	case workload.FaultKill:
		err = n.Kill()
	case workload.FaultPause:
		err = n.Pause()
	case workload.FaultResume:
		err = n.Resume()
	case workload.FaultRestart:
		err = f.c.Restart(ctx, id)
	default:
		err = fmt.Errorf("unknown fault action %q", action)
	}
	return target, err
}

// shapeLinks gives the links between node id and the fault's peer the
// fault's shape, or, for its undo, clears them.
func (f *nodeFault) shapeLinks(id int) error {
	sel := local.LinkSelector{Node: id}
	switch peer := f.spec.Peer; peer {
	case "":
	case workload.PeerClient:
		sel.Peers = []int{0}
	default:
		p, _ := strconv.Atoi(peer)
		sel.Peers = []int{p}
	}
	var shape local.LinkShape
	if !f.undo {
		switch f.spec.Action {
		case workload.FaultDelay:
			shape.Delay, shape.Jitter = f.spec.Delay, f.spec.Jitter
		case workload.FaultBandwidth:
			shape.BytesPerSecond = f.spec.BandwidthKBps * 1000
		case workload.FaultPartition:
			shape.Cut = true
		case workload.FaultReset:
			shape.Reset = true
		}
	}
	n, err := f.c.ShapeLinks(f.group, sel.Matches, shape)
	if err == nil && n == 0 {
		err = fmt.Errorf("no link between node %d and %s", id, nodeWords(f.spec.Peer))
	}
	return err
}
