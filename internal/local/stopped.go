package local

import "fmt"

// RunningPIDs returns the process IDs of the cluster's nodes that run, by
// node ID, for StoppedSince.
func (c *Cluster) RunningPIDs() map[int]int {
	pids := map[int]int{}
	for _, n := range c.Nodes() {
		if pid, ok := n.PID(); ok {
			pids[n.ID] = pid
		}
	}
	return pids
}

// StoppedSince says, a line a node, which of the nodes that ran with the
// process IDs of before (from RunningPIDs) no longer run as those
// processes: stopped, killed or started again since. It returns none when
// every one still runs.
func (c *Cluster) StoppedSince(before map[int]int) []string {
	var stopped []string
	for _, n := range c.Nodes() {
		was, ok := before[n.ID]
		if !ok {
			continue
		}
		pid, err := readPID(n.pidFile())
		switch {
		case err == nil && pid != was && alive(pid, n.Marker()):
			stopped = append(stopped, fmt.Sprintf("%s node %d (%s) was started again: pid %d, then %d", c.Kind.Name(), n.ID, n.Host, was, pid))
		case err != nil || pid != was || !n.runningAfterExec():
			stopped = append(stopped, fmt.Sprintf("%s node %d (%s, pid %d) %s; its log: %s", c.Kind.Name(), n.ID, n.Host, was, n.exitReason(was), n.LogFile()))
		}
	}
	return stopped
}
