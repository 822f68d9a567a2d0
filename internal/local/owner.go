package local

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/brokerbench/brokerbench/internal/proc"
)

// Who started a cluster, as its record says: that decides who may stop
// or replace it.
const (
	// StartedByUser: 'local up' started the cluster. It runs until
	// 'local down', and it, with its data, is replaced only when asked
	// for (Cluster.Replace).
	StartedByUser = "local up"
	// StartedByRun: a run or a study started the cluster for itself (a
	// run leaves it running, a study stops it). Once that run has ended,
	// the cluster is left over: later runs use it or replace it, and so
	// does 'local up', saying so.
	StartedByRun = "run"
)

// runOwner is the process of the run that started a cluster: its PID and
// start time, which together name one process, not a later one given the
// same PID.
type runOwner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// self is this process as a run owner.
func self() *runOwner {
	return &runOwner{PID: os.Getpid(), Start: proc.StartTime(os.Getpid())}
}

// live reports whether the run is still in progress.
func (o *runOwner) live() bool {
	return o != nil && proc.Live(o.PID) && proc.StartTime(o.PID) == o.Start
}

// isSelf reports whether the run is this process.
func (o *runOwner) isSelf() bool {
	return o != nil && o.PID == os.Getpid() && o.live()
}

// leftOver reports whether the recorded cluster was started by a run
// that has ended, or by this process: no one else will use it, or stop it.
func (r record) leftOver() bool {
	return r.StartedBy == StartedByRun && (r.Run.isSelf() || !r.Run.live())
}

// Shape is what tells two clusters of one kind apart: the number of
// brokers and of dedicated controllers, whether the links pass through
// the link proxy, the client listeners served, and the release run. Up
// keeps a recorded cluster, and its data, only when asked for the same
// shape.
type Shape struct {
	Brokers, Controllers int
	Links                bool
	// Listeners are the client listeners served (nil: the kind's plain
	// one).
	Listeners []string
	// Version is the release run (empty: not known, as in records
	// written before releases could be chosen).
	Version string
}

// Equal reports whether s and o are the same shape; a version not known
// in either matches any.
func (s Shape) Equal(o Shape) bool {
	return s.Brokers == o.Brokers && s.Controllers == o.Controllers && s.Links == o.Links && slices.Equal(s.Listeners, o.Listeners) &&
		(s.Version == "" || o.Version == "" || s.Version == o.Version)
}

// String describes the shape in words: "3 brokers, links through the
// link proxy, serving sasl_ssl".
func (s Shape) String() string {
	parts := []string{plural(s.Brokers, "broker")}
	if s.Controllers > 0 {
		parts = append(parts, plural(s.Controllers, "dedicated controller"))
	}
	if s.Links {
		parts = append(parts, "links through the link proxy")
	}
	if len(s.Listeners) > 0 {
		parts = append(parts, "serving "+strings.Join(s.Listeners, ", "))
	}
	if s.Version != "" {
		parts = append(parts, "release "+s.Version)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// shape is the recorded cluster's shape; defaults are the listeners of
// records that name none.
func (r record) shape(defaults []string) Shape {
	ls := r.Listeners
	if ls == nil {
		ls = defaults
	}
	return Shape{Brokers: r.Brokers, Controllers: r.Controllers, Links: r.LinkProxy != nil, Listeners: ls, Version: r.Version}
}

// ReplaceError is Up's refusal to replace a recorded cluster of another
// shape, and delete its data, when not told to (Cluster.Replace): one
// that 'local up' started, or a run in progress, or a brokerbench that
// did not record who. Nothing was started, stopped or deleted.
type ReplaceError struct {
	Kind, StateDir string
	// Recorded is the shape of the cluster in StateDir, Asked the shape
	// Up was asked for.
	Recorded, Asked Shape
	// Running is true when every node of the recorded cluster runs;
	// NodesRunning counts those that do.
	Running      bool
	NodesRunning int
	// StartedBy is who started it (StartedByUser, StartedByRun, or ""
	// when the record does not say); RunPID the run in progress that
	// started it, if any.
	StartedBy string
	RunPID    int
	// DataBytes is the size of its nodes' directories: what replacing it
	// deletes.
	DataBytes int64
}

func (e *ReplaceError) Error() string {
	return fmt.Sprintf("the %s cluster recorded in %s (%s; %s, %s) is not the one asked for (%s): starting that one would delete this one and its data (%s in its nodes' directories: every topic, queue or stream on it, with their messages); nothing was changed",
		e.Kind, e.StateDir, e.Recorded, e.State(), e.Origin(), e.Asked, FormatBytes(e.DataBytes))
}

// State says whether the recorded cluster runs: "running", "stopped", or
// "1 of 3 nodes running".
func (e *ReplaceError) State() string {
	switch {
	case e.Running:
		return "running"
	case e.NodesRunning == 0:
		return "stopped"
	}
	return fmt.Sprintf("%d of %d nodes running", e.NodesRunning, e.Recorded.Brokers+e.Recorded.Controllers)
}

// Origin says who started the recorded cluster.
func (e *ReplaceError) Origin() string { return Origin(e.StartedBy, e.RunPID) }

// Origin says who started a cluster, from its status: "started by 'local
// up'", "started by a run in progress (pid 123)".
func Origin(startedBy string, runPID int) string {
	switch {
	case startedBy == StartedByUser:
		return "started by 'local up'"
	case startedBy == StartedByRun && runPID != 0:
		return fmt.Sprintf("started by a run in progress (pid %d)", runPID)
	case startedBy == StartedByRun:
		return "started by a run that has ended"
	}
	return "started by an earlier brokerbench that did not record by whom"
}

// FormatBytes writes n bytes for people: "512 B", "3.4 MB", "1.2 GB".
func FormatBytes(n int64) string {
	const k = 1000
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f kB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GB", float64(n)/(k*k*k))
}

// dataBytes is the disk space the files under the nodes' directories
// take: preallocated, sparse files (Kafka's indexes) count for what they
// hold, not for their length.
func dataBytes(nodes []*Node) int64 {
	var total int64
	for _, n := range nodes {
		_ = filepath.WalkDir(n.Dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			size := info.Size()
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				size = min(size, st.Blocks*512)
			}
			total += size
			return nil
		})
	}
	return total
}
