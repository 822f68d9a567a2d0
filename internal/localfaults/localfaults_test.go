package localfaults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// hosts is a driver.HostPlacement that names fixed hosts.
type hosts struct {
	leader, controller string
	err                error
}

func (h hosts) LeaderHost(context.Context, string, int) (string, error) { return h.leader, h.err }
func (h hosts) ControllerHost(context.Context) (string, error)          { return h.controller, h.err }

// TestByHost: a driver that names hosts finds the broker node on that
// host, never a node of another role there; a host without a broker node
// and the driver's own error are errors.
func TestByHost(t *testing.T) {
	nodes := []*local.Node{
		{ID: 101, Roles: []string{"zookeeper"}, Host: "127.0.1.3"},
		{ID: 1, Roles: []string{"broker", "bookie"}, Host: "127.0.1.1"},
		{ID: 2, Roles: []string{"broker", "bookie"}, Host: "127.0.1.2"},
		{ID: 3, Roles: []string{"broker", "bookie"}, Host: "127.0.1.3"},
	}
	ctx := context.Background()
	f := ByHost(nodes, hosts{leader: "127.0.1.3", controller: "127.0.1.2"})
	if id, err := f.Leader(ctx, "t", 0); err != nil || id != 3 {
		t.Errorf("Leader = %d, %v; want node 3, the broker on 127.0.1.3", id, err)
	}
	if id, err := f.Controller(ctx); err != nil || id != 2 {
		t.Errorf("Controller = %d, %v; want node 2", id, err)
	}
	if id, err := ByHost(nodes, hosts{leader: "127.0.9.9"}).Leader(ctx, "t", 0); err == nil {
		t.Errorf("Leader on a host without a node = %d; want an error", id)
	}
	refused := errors.New("lookup refused")
	if _, err := ByHost(nodes, hosts{err: refused}).Controller(ctx); !errors.Is(err, refused) {
		t.Errorf("Controller = %v; want the driver's error", err)
	}
}

// TestUnplaced: a driver that names no node for a role has faults aimed
// at the leader or the controller refused before the run, with its
// reason; faults aimed at a node by number or at random are scheduled.
func TestUnplaced(t *testing.T) {
	why := Unplaced("every node serves every topic")
	for _, role := range []string{workload.NodeLeader, workload.NodeController} {
		_, err := Schedule(&local.Cluster{}, []workload.Fault{{Action: workload.FaultKill, Node: role}}, why, 1)
		if err == nil || !strings.Contains(err.Error(), string(why)) {
			t.Errorf("kill %s: %v; want a refusal giving the driver's reason", role, err)
		}
	}
	sched, err := Schedule(&local.Cluster{}, []workload.Fault{{Action: workload.FaultPause, Node: workload.NodeRandom, For: time.Second}}, why, 1)
	if err != nil || len(sched) != 2 {
		t.Errorf("pause a random node for 1s: %d faults, %v; want the pause and its undo", len(sched), err)
	}
}
