package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/output"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// warmUpDuration is how long a cluster brokerbench just started is run,
// unmeasured, before its first measured run.
const warmUpDuration = 10 * time.Second

// warmUpIfFresh runs w once, unmeasured, for warmUpDuration when the
// target's local cluster was just started: a cold broker JVM runs its
// first seconds about half as fast on 2 cores (compiling as it goes), and
// the first measured run would show that instead of the broker. The
// warm-up's topics are registered and deleted like a run's.
func warmUpIfFresh(ctx context.Context, io IO, t *Target, drv driver.Driver, driverName string, w *workload.Workload, target string) error {
	if !t.takeFresh() {
		return nil
	}
	ww := *w
	ww.Warmup, ww.Duration, ww.MessageLimit, ww.ConsumerBacklogSizeGB, ww.Faults = 0, warmUpDuration, 0, 0, nil
	fmt.Fprintf(io.Err, "warming up the cluster just started: %s of %s, unmeasured\n", warmUpDuration, w.Name)
	head := &results.Run{Schema: results.Schema, ID: runner.NewID(), Workload: &ww, Driver: results.Driver{Name: driverName}, StartedAt: time.Now().UTC()}
	outs := output.NewManager(io.Err, &topicRegistry{target: target})
	_ = outs.Start(head) // the registry starts without fail
	_, err := runner.Run(ctx, runner.Config{Workload: &ww, Driver: drv, ID: head.ID, Journal: outs, DrainTimeout: warmUpDuration, MaxSendLag: -1})
	_ = outs.Stop(nil) // a registry failure is a warning
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(io.Err, "warning: the warm-up failed (%v); measuring anyway\n", err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted during the unmeasured warm-up of the cluster just started: nothing was measured, and no results were written (%w)", ctx.Err())
	}
	return nil
}
