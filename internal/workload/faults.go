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

	// Link faults act on the links between a node and its peers, which
	// pass through brokerbench's link proxy.
	FaultDelay     = "delay"     // add delay ± jitter to every byte, each way
	FaultBandwidth = "bandwidth" // limit each direction to bandwidthKBps
	FaultPartition = "partition" // drop everything; at heal, the cut connections close
	FaultReset     = "reset"     // reset every connection, and each new one while it lasts
)

// PeerClient names the clients as a link fault's peer.
const PeerClient = "client"

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
	// Peer limits a link fault to the links between Node and this peer
	// (a node id, or "client"); empty: all of Node's links.
	Peer string `json:"peer,omitempty"`
	// Delay and Jitter shape a delay; BandwidthKBps a bandwidth limit.
	Delay         time.Duration `json:"delayNs,omitempty"`
	Jitter        time.Duration `json:"jitterNs,omitempty"`
	BandwidthKBps int64         `json:"bandwidthKBps,omitempty"`
	// Line is the entry's line in its file.
	Line int `json:"-"`
}

// OnLinks reports whether the fault acts on links rather than on a node's
// process.
func (f Fault) OnLinks() bool {
	switch f.Action {
	case FaultDelay, FaultBandwidth, FaultPartition, FaultReset:
		return true
	}
	return false
}

// NeedsLinks reports whether any of the workload's faults acts on links:
// its local cluster must then carry them through the link proxy.
func (w *Workload) NeedsLinks() bool {
	for _, f := range w.Faults {
		if f.OnLinks() {
			return true
		}
	}
	return false
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
	if f.OnLinks() {
		s = fmt.Sprintf("%s %s at %s", f.Action, f.Links(), f.At)
	}
	if f.For > 0 {
		s += fmt.Sprintf(" for %s", f.For)
	}
	return s
}

// Links describes a link fault's links and shape, e.g. "the links of
// leader and client, 200ms ± 20ms".
func (f Fault) Links() string {
	s := "the links of " + nodeName(f.Node)
	if f.Peer != "" {
		s += " and " + nodeName(f.Peer)
	}
	switch f.Action {
	case FaultDelay:
		s += ", " + f.Delay.String()
		if f.Jitter > 0 {
			s += " ± " + f.Jitter.String()
		}
	case FaultBandwidth:
		s += fmt.Sprintf(", %d KB/s", f.BandwidthKBps)
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
			d.fail(v, key, "must be a list of faults, each {at: DURATION, action: kill|pause|restart|resume|delay|bandwidth|partition|reset, node: ID|leader|controller|random, for: DURATION} (link faults also take peer, delay, jitter, bandwidthKBps)")
			return
		}
		for _, item := range v.Content {
			f := Fault{Line: item.Line}
			before := len(d.errs)
			d.mapping(item, "a fault", map[string]fieldSetter{
				"at":            durationField(&f.At, 0),
				"action":        enumField(&f.Action, FaultKill, FaultPause, FaultRestart, FaultResume, FaultDelay, FaultBandwidth, FaultPartition, FaultReset),
				"node":          nodeField(&f.Node),
				"for":           durationField(&f.For, 0),
				"peer":          peerField(&f.Peer),
				"delay":         durationField(&f.Delay, time.Millisecond),
				"jitter":        durationField(&f.Jitter, 0),
				"bandwidthKBps": int64Field(&f.BandwidthKBps),
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
			default:
				if msg := f.shapeError(); msg != "" {
					d.fail(item, key, "%s", msg)
				}
			}
			*dst = append(*dst, f)
		}
	}
}

// shapeError says what is wrong with the fault's link settings, or "".
func (f Fault) shapeError() string {
	switch {
	case !f.OnLinks() && (f.Peer != "" || f.Delay > 0 || f.Jitter > 0 || f.BandwidthKBps > 0):
		return fmt.Sprintf("peer, delay, jitter and bandwidthKBps belong to link faults (delay, bandwidth, partition, reset), not to a %s", f.Action)
	case f.Action == FaultDelay && f.Delay == 0:
		return "a delay needs delay: DURATION (and may take jitter: DURATION)"
	case f.Action != FaultDelay && (f.Delay > 0 || f.Jitter > 0):
		return fmt.Sprintf("delay and jitter belong to a delay fault, not to a %s", f.Action)
	case f.Jitter > f.Delay:
		return fmt.Sprintf("jitter %s is larger than the delay %s", f.Jitter, f.Delay)
	case f.Delay%time.Millisecond != 0 || f.Jitter%time.Millisecond != 0:
		return fmt.Sprintf("delay and jitter are applied in whole milliseconds, got %s ± %s", f.Delay, f.Jitter)
	case f.Action == FaultBandwidth && f.BandwidthKBps == 0:
		return "a bandwidth fault needs bandwidthKBps: N (kilobytes per second, each way)"
	case f.Action != FaultBandwidth && f.BandwidthKBps > 0:
		return fmt.Sprintf("bandwidthKBps belongs to a bandwidth fault, not to a %s", f.Action)
	case f.Peer != "" && f.Peer == f.Node:
		return "a node's link to itself does not pass through the link proxy: choose another peer"
	}
	return ""
}

// peerField decodes a link fault's peer: a node id or "client".
func peerField(dst *string) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, "a node id or client")
		if !ok {
			return
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 1 || s == PeerClient {
			*dst = s
			return
		}
		d.fail(v, key, "must be a node id (1 or more) or client, got %q", s)
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
