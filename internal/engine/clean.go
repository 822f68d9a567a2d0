package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// CleanOptions name the broker whose leftover topics Clean removes.
type CleanOptions struct {
	// Broker and DriverFile are as RunOptions'.
	Broker, DriverFile string
	Local              LocalOptions
}

// DefaultCleanOptions are the options of a clean the user says nothing
// about.
func DefaultCleanOptions() CleanOptions {
	return CleanOptions{Local: localTarget(1)}
}

// Clean removes from the broker the options name the topics that runs
// which did not finish left there, and forgets those runs.
func Clean(ctx context.Context, io IO, o CleanOptions) error {
	if err := o.Local.Validate(); err != nil {
		return err
	}
	dc := DefaultDriver()
	if o.DriverFile != "" {
		var err error
		if dc, err = workload.LoadDriver(o.DriverFile); err != nil {
			return err
		}
	}
	sig := WatchInterrupts(ctx, io.Err)
	defer sig.Release()
	tgt := newTarget(io, o.Broker, o.Local)
	drv, env, err := tgt.connect(sig.Stop, dc)
	if err != nil {
		return err
	}
	defer closeBounded(drv, sig.Abandon)
	cleanLeftovers(sig.Stop, io, drv, dc.Name, targetKey(env, dc.Source))
	return nil
}

// ListLeftovers prints every run that left topics behind, on any broker.
func ListLeftovers(io IO) error {
	dead, err := registry().Dead()
	if err != nil {
		return failed(fmt.Errorf("topic registry: %w", err))
	}
	if len(dead) == 0 {
		fmt.Fprintln(io.Out, "no run left topics behind")
		return nil
	}
	for _, e := range dead {
		fmt.Fprintf(io.Out, "run %s (pid %d, started %s) on %s at %s: %s\n", e.RunID, e.PID,
			e.StartedAt.Local().Format(time.DateTime), e.Driver, e.Target, strings.Join(e.Topics, ", "))
	}
	return nil
}
