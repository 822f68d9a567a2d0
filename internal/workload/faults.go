package workload

import (
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Fault actions.
const (
	FaultKill    = "kill"    // SIGKILL the node's process, as a crash would
	FaultPause   = "pause"   // SIGSTOP it, as a long GC pause or a hung machine would
	FaultRestart = "restart" // start a killed node again
	FaultResume  = "resume"  // SIGCONT a paused node
)

// Node selectors besides a node id.
const (
	NodeLeader     = "leader"     // the leader of the run's first topic's partition 0
	NodeController = "controller" // the active controller
	NodeRandom     = "random"     // a broker chosen at random with the workload's seed
)

// Fault is one entry of a workload's fault schedule: at an offset into the
// measurement phase, an action on a node of a local cluster. For kills
// and pauses, For undoes the action after that long (restart, resume).
type Fault struct {
	At     time.Duration `json:"atNs"`
	Action string        `json:"action"`
	// Node is a node id, or leader, controller or random.
	Node string        `json:"node"`
	For  time.Duration `json:"forNs,omitempty"`
	// Line is the entry's line in its file.
	Line int `json:"-"`
}

// NodeID returns the node id the fault names, or 0 for a selector.
func (f Fault) NodeID() int {
	n, err := strconv.Atoi(f.Node)
	if err != nil {
		return 0
	}
	return n
}

// String describes the fault, e.g. "kill leader at 5s for 10s".
func (f Fault) String() string {
	s := fmt.Sprintf("%s %s at %s", f.Action, nodeName(f.Node), f.At)
	if f.For > 0 {
		s += fmt.Sprintf(" for %s", f.For)
	}
	return s
}

func nodeName(n string) string {
	if _, err := strconv.Atoi(n); err == nil {
		return "node " + n
	}
	return n
}

// faultsField decodes the faults: list.
func faultsField(dst *[]Fault) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		if v.Kind != yaml.SequenceNode {
			d.fail(v, key, "must be a list of faults, each {at: DURATION, action: kill|pause|restart|resume, node: ID|leader|controller|random, for: DURATION}")
			return
		}
		for _, item := range v.Content {
			f := Fault{Line: item.Line}
			before := len(d.errs)
			d.mapping(item, "a fault", map[string]fieldSetter{
				"at":     durationField(&f.At, 0),
				"action": enumField(&f.Action, FaultKill, FaultPause, FaultRestart, FaultResume),
				"node":   nodeField(&f.Node),
				"for":    durationField(&f.For, 0),
			})
			switch {
			case len(d.errs) > before:
				// The entry's own fields were wrong; said already.
			case f.Action == "" || f.Node == "":
				d.fail(item, key, "a fault needs an action and a node")
			case f.For > 0 && (f.Action == FaultRestart || f.Action == FaultResume):
				d.fail(item, key, "'for' undoes a kill or a pause; a %s takes none", f.Action)
			case (f.Action == FaultRestart || f.Action == FaultResume) && f.NodeID() == 0:
				d.fail(item, key, "a %s names a node id (use 'for' on the kill or pause to undo it on a selected node)", f.Action)
			}
			*dst = append(*dst, f)
		}
	}
}

// nodeField decodes a node id or selector.
func nodeField(dst *string) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, "a node id or leader, controller, random")
		if !ok {
			return
		}
		if n, err := strconv.Atoi(s); err == nil {
			if n < 1 {
				d.fail(v, key, "node ids start at 1, got %d", n)
				return
			}
			*dst = s
			return
		}
		switch s {
		case NodeLeader, NodeController, NodeRandom:
			*dst = s
		default:
			d.fail(v, key, "must be a node id or leader, controller, random, got %q%s", s, suggest(s, []string{NodeLeader, NodeController, NodeRandom}))
		}
	}
}

// validateFaults checks the schedule against the workload's duration.
func (w *Workload) validateFaults() []error {
	var errs []error
	for _, f := range w.Faults {
		if f.At >= w.Duration {
			errs = append(errs, &FieldError{File: w.Source, Line: f.Line, Field: "faults",
				Msg: fmt.Sprintf("%s: at %s is not within the %s measurement", f, f.At, w.Duration)})
		}
	}
	return errs
}
