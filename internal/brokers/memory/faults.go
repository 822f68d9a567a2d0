package memory

import (
	"context"
	"fmt"
	"strconv"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Faults turns a workload's fault schedule into faults on the broker that
// drv reaches, which is one node ("1"; leader, controller and random all
// name it) with one link, to the clients:
//   - kill and pause stop it (Broker.Stop), restart and resume start it;
//   - a partition of its links stops it too, and its heal starts it;
//   - a delay adds to its one-way time (jitter is not modelled: refused);
//   - a reset fails every message on its way to it, and while it lasts
//     (for), every message that reaches it;
//   - a bandwidth limit is refused: ceiling.per.second limits its rate.
//
// A fault with a duration is followed by its undo. heal starts the broker
// and removes a link delay, for after a run whose faults left it so.
func Faults(drv driver.Driver, schedule []workload.Fault) (sched []faults.Scheduled, heal func(), err error) {
	d, ok := drv.(*Driver)
	if !ok {
		return nil, nil, fmt.Errorf("memory faults need the memory driver, not %T", drv)
	}
	b := d.b
	for _, spec := range schedule {
		if err := check(spec); err != nil {
			return nil, nil, fmt.Errorf("fault %q: %w", spec, err)
		}
		do, undo := actions(b, spec)
		sched = append(sched, faults.Scheduled{At: spec.At, Fault: &fault{what: spec.String(), target: "the memory broker", act: do}})
		if spec.For > 0 && undo != nil {
			sched = append(sched, faults.Scheduled{At: spec.At + spec.For, Fault: &fault{what: undoWords(spec), target: "the memory broker", act: undo}})
		}
	}
	return sched, func() { b.Start(); b.SetLinkDelay(0); b.Refuse(false) }, nil
}

// check says why spec cannot act on the memory broker, or nil.
func check(spec workload.Fault) error {
	if id := spec.NodeID(); id > 1 || spec.Node != "" && id == 0 && spec.Node != workload.NodeLeader && spec.Node != workload.NodeController && spec.Node != workload.NodeRandom {
		return fmt.Errorf("the memory broker has one node, 1")
	}
	if spec.Peer != "" && spec.Peer != workload.PeerClient && spec.Peer != strconv.Itoa(1) {
		return fmt.Errorf("the memory broker's one link is to the clients (peer: client)")
	}
	switch {
	case spec.Action == workload.FaultBandwidth:
		return fmt.Errorf("the memory broker has no link whose bandwidth can be limited: set its commonConfig ceiling.per.second instead")
	case spec.Action == workload.FaultDelay && spec.Jitter > 0:
		return fmt.Errorf("the memory broker's link delay has no jitter: leave jitter out")
	}
	return nil
}

// actions returns what spec does to b, and what undoes it (nil: nothing
// to undo).
func actions(b *Broker, spec workload.Fault) (do, undo func()) {
	switch spec.Action {
	case workload.FaultKill, workload.FaultPause, workload.FaultPartition:
		return b.Stop, b.Start
	case workload.FaultRestart, workload.FaultResume:
		return b.Start, nil
	case workload.FaultDelay:
		return func() { b.SetLinkDelay(spec.Delay) }, func() { b.SetLinkDelay(0) }
	default: // workload.FaultReset
		if spec.For > 0 {
			return func() { b.Reset(); b.Refuse(true) }, func() { b.Refuse(false) }
		}
		return b.Reset, nil
	}
}

// undoWords names the undo of spec as local clusters' faults do: "heal
// the links of ...", "restart the node of 'kill leader'".
func undoWords(spec workload.Fault) string {
	if spec.OnLinks() {
		return "heal " + spec.Links()
	}
	verb := map[string]string{workload.FaultKill: workload.FaultRestart, workload.FaultPause: workload.FaultResume}[spec.Action]
	return fmt.Sprintf("%s the node of '%s %s'", verb, spec.Action, spec.Node)
}

// fault is one scheduled action on the memory broker.
type fault struct {
	what, target string
	act          func()
}

// Apply implements faults.Fault.
func (f *fault) Apply(context.Context, []string) (string, error) {
	f.act()
	return f.target, nil
}

// String implements faults.Fault.
func (f *fault) String() string { return f.what }
