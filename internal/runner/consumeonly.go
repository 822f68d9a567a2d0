package runner

import (
	"context"
	"sync"
	"time"
)

// consumeOnly is the load shape of a run without producers: its consumers
// read what the topics hold, or what other processes send, through the
// warmup and the measurement, until the duration is over or the
// subscriptions together consumed the message limit once each.
type consumeOnly struct{ r *run }

// finished implements executor: closed once every subscription could have
// consumed the message limit; nil without a limit or without consumers.
func (e consumeOnly) finished(ctx context.Context, _ *sync.WaitGroup) <-chan struct{} {
	r := e.r
	if r.w.MessageLimit <= 0 || len(r.subs) == 0 {
		return nil
	}
	done := make(chan struct{})
	go r.closeWhenConsumed(ctx, r.w.MessageLimit*int64(len(r.subs)), done)
	return done
}

// phases implements executor; consumers paused on existing topics resume
// at the start, so that what the topics hold is consumed in measured time.
func (e consumeOnly) phases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool) {
	e.r.resumeConsumers()
	return e.r.timedPhases(ctx, c, finished)
}

// drain implements executor: without producers nothing was acknowledged
// that the consumers could still be waiting for.
func (consumeOnly) drain(context.Context, *collector, time.Duration) error { return nil }

// closeWhenConsumed closes done once the consumers have received n messages
// in total (foreign ones included), or when ctx ends.
func (r *run) closeWhenConsumed(ctx context.Context, n int64, done chan<- struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for t := r.totals(); t.consumed+t.foreign < n; t = r.totals() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	close(done)
}
