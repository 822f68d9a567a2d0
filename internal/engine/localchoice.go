package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
)

// chooseLocal decides what runs that need need do about the local
// cluster st describes (the one recorded in the state directory, perhaps
// none): use it as it is (true), or start one (false: a new one of the
// shape needed, or the recorded one started again with its data when it
// has that shape), or neither (an error saying why and what to do).
//
// A running cluster that fits is used as it is, unless another run in
// progress started it. A cluster that does not fit is replaced when this
// process or an ended run started it (brokerbench's own); when 'local up'
// started it, or another run in progress, it is left as it is unless
// need.replace, and the runs are refused. A stopped cluster 'local up'
// started is started again only when it has the shape needed.
func chooseLocal(st local.Status, need localNeed) (bool, error) {
	if len(st.Nodes) == 0 || st.StartedBy == local.StartedByRun && st.RunPID == need.self {
		return false, nil
	}
	misfit := misfit(st, need)
	if st.RunPID == 0 && st.Running && misfit == "" {
		return true, nil
	}
	if need.replace || st.StartedBy == local.StartedByRun && st.RunPID == 0 {
		return false, nil
	}
	what := fmt.Sprintf("the local %s cluster in %s (%s; %s, %s)", st.Kind, st.StateDir, st.Shape(), stateWords(st), local.Origin(st.StartedBy, st.RunPID))
	if st.RunPID != 0 {
		return false, fmt.Errorf("%s is in use: wait for that run to end, give these runs a cluster of their own on another port with --local-port, or add --replace to take it over (that run then fails)", what)
	}
	keep := "brokerbench leaves a cluster that 'local up' started as it is unless told otherwise"
	if st.Running {
		return false, fmt.Errorf("%s cannot take these runs: it %s. %s: replace it with one that fits, %s, or add --replace to have these runs replace it (deleting its data); or give them a cluster of their own on another port with --local-port",
			what, misfit, keep, fitCommand(st, need))
	}
	if n := st.NodesRunning(); n > 0 {
		return false, fmt.Errorf("%s is not whole: %d of its %d nodes run. %s: start its other nodes with 'brokerbench local up %s', or add --replace to have these runs replace it (deleting its data)",
			what, n, len(st.Nodes), keep, UpFlags(st.Kind, st.StateDir, st.Shape()))
	}
	if misfit == "" && sameShape(st, need) {
		return false, nil // started again as it is, with its data
	}
	reason := "is not the shape these runs need: it " + misfit
	if misfit == "" {
		reason = fmt.Sprintf("is not the shape these runs would start (%s)", neededShape(st, need))
	}
	return false, fmt.Errorf("%s %s. Starting another in its place would delete it and its data: start it with 'brokerbench local up %s' and these runs use it as it is, or add --replace to have them replace it (deleting its data); or give them a cluster of their own on another port with --local-port",
		what, reason, UpFlags(st.Kind, st.StateDir, st.Shape()))
}

// misfit says why the cluster st describes cannot take runs that need
// need ("has 1 broker; the workload's replication factor 3 needs at least
// 3"); "" if it can.
func misfit(st local.Status, need localNeed) string {
	switch {
	case need.exact && st.Brokers != need.brokers:
		return fmt.Sprintf("has %s; %s asks for %d", plural(st.Brokers, "broker"), need.why, need.brokers)
	case !need.exact && st.Brokers < need.brokers:
		return fmt.Sprintf("has %s; %s needs at least %d", plural(st.Brokers, "broker"), need.why, need.brokers)
	case need.version != "" && st.Version != need.version:
		return fmt.Sprintf("runs release %s; %s asks for %s", st.Version, need.versionWhy(), need.version)
	case need.links && st.LinkProxy == nil:
		return "does not carry its links through the link proxy, which the runs' network or link faults need"
	case need.strict && !need.links && st.LinkProxy != nil:
		return fmt.Sprintf("carries its links through the link proxy, which %s does not ask for (its runs would measure the proxy too)", need.why)
	case len(st.Endpoints(need.listener)) == 0:
		return fmt.Sprintf("serves %s, not the %q listener the driver config connects to ('brokerbench local status %s' lists its listeners and credentials)", strings.Join(st.Listeners, ", "), need.listener, strings.Join(append([]string{st.Kind}, whereFlags(st.Kind, st.StateDir)...), " "))
	}
	return ""
}

// sameShape reports whether the recorded cluster st describes is the
// shape runs that need need would start, so that starting it keeps it and
// its data.
func sameShape(st local.Status, need localNeed) bool {
	return st.Brokers == need.brokers && st.Controllers == 0 && (st.LinkProxy != nil) == need.links && len(st.Endpoints(need.listener)) > 0 &&
		(st.Version == "" || need.release == "" || st.Version == need.release)
}

// neededShape describes the cluster runs that need need would start in
// place of the one st describes.
func neededShape(st local.Status, need localNeed) local.Shape {
	s := local.Shape{Brokers: need.brokers, Links: need.links, Version: need.release}
	if len(st.Endpoints(need.listener)) > 0 {
		s.Listeners = st.Listeners
	}
	return s
}

// stateWords says whether the cluster st describes runs.
func stateWords(st local.Status) string {
	switch n := st.NodesRunning(); {
	case st.Running:
		return "running"
	case n == 0:
		return "stopped"
	default:
		return fmt.Sprintf("%d of %d nodes running", n, len(st.Nodes))
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fitCommand is the 'local up' command that replaces the cluster st
// describes with one that fits need, keeping its links and the listeners
// it serves, adding the one need connects to.
func fitCommand(st local.Status, need localNeed) string {
	s := st.Shape()
	s.Brokers = max(s.Brokers, need.brokers)
	if need.exact {
		s.Brokers = need.brokers
	}
	s.Links = s.Links || need.links
	if need.version != "" {
		s.Version = need.version
	}
	if need.strict && !need.links {
		s.Links = false
	}
	if len(st.Endpoints(need.listener)) == 0 && need.listener != "" {
		s.Listeners = append(slices.Clip(s.Listeners), need.listener)
		c, err := brokers.NewLocal(st.Kind, 0, 1)
		if err == nil {
			c.Listeners = s.Listeners
			if c.CheckListeners() != nil {
				if sec, ok := c.Kind.(local.Securer); ok {
					s.Listeners = sec.Listeners()
				}
			}
		}
	}
	return "'brokerbench local up " + UpFlags(st.Kind, st.StateDir, s) + " --replace'"
}

// UpFlags are the arguments of 'local up' that start a cluster of shape s
// of kind in stateDir.
func UpFlags(kind, stateDir string, s local.Shape) string {
	args := []string{kind}
	if s.Brokers > 1 {
		args = append(args, "--brokers", strconv.Itoa(s.Brokers))
	}
	if s.Controllers > 0 {
		args = append(args, "--controllers", strconv.Itoa(s.Controllers))
	}
	if s.Links {
		args = append(args, "--links")
	}
	if c, err := brokers.NewLocal(kind, 0, 1); err == nil {
		if sec, ok := c.Kind.(local.Securer); ok && len(s.Listeners) > 0 && !slices.Equal(s.Listeners, sec.Listeners()[:1]) {
			args = append(args, "--security", strings.Join(s.Listeners, ","))
		}
		if s.Version != "" && s.Version != c.Kind.Version() {
			args = append(args, "--version", s.Version)
		}
	}
	return strings.Join(append(args, whereFlags(kind, stateDir)...), " ")
}

// whereFlags are the flags of 'local' commands that find the cluster of
// kind in stateDir: none for the default port's, else --port or
// --state-dir.
func whereFlags(kind, stateDir string) []string {
	c, err := brokers.NewLocal(kind, 0, 1)
	if err != nil || stateDir == c.StateDir {
		return nil
	}
	if port := defaultDirPort(kind, stateDir); port != 0 {
		return []string{"--port", strconv.Itoa(port)}
	}
	return []string{"--state-dir", stateDir}
}

// defaultDirPort is the client port whose default state directory is
// stateDir, or 0 if it is no port's.
func defaultDirPort(kind, stateDir string) int {
	var port int
	if _, err := fmt.Sscanf(filepath.Base(stateDir), kind+"-%d", &port); err != nil || port < 1 || port > 65535 {
		return 0
	}
	if c, err := brokers.NewLocal(kind, port, 1); err != nil || c.StateDir != stateDir {
		return 0
	}
	return port
}
