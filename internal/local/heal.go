package local

import (
	"context"
	"errors"
)

// Heal brings every node back after faults: paused nodes are resumed,
// stopped ones restarted, every link cleared of the faults' shapes (the
// network a setup asked for stays), and it waits until the cluster is
// ready.
func (c *Cluster) Heal(ctx context.Context) error {
	var errs []error
	errs = append(errs, c.clearFaultLinks())
	for _, n := range c.Nodes() {
		if _, ok := n.PID(); ok {
			errs = append(errs, n.Resume())
			continue
		}
		c.logf("restarting node %d after the run's faults", n.ID)
		errs = append(errs, c.Restart(ctx, n.ID))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.waitReady(ctx, c.startLimit())
}
