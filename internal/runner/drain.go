package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
)

// drainAcked is the drain of a run with producers in one process: it
// waits until every subscription consumed every acknowledged message (every
// message the broker stored, where the driver counts them), sampling
// intervals meanwhile, until ctx ends (bound is its timeout, for the
// error).
func (r *run) drainAcked(ctx context.Context, c *collector, bound time.Duration) error {
	if len(r.consumers) == 0 {
		return nil
	}
	// Caught up means every subscription received every message the
	// broker holds (without the broker's count, every acknowledged one),
	// counting distinct messages: redeliveries, which follow a consumer
	// rebalance after a fault, must not end the drain while messages are
	// still on their way and turn them into "lost". Messages the broker
	// acknowledged and lost never arrive, and are counted by reconcile.
	// The broker's count settles in the background (replicas may still
	// be fetching the last acknowledged messages); until it has, the
	// drain is not over.
	subs := int64(r.w.SubscriptionsPerTopic)
	want := func() int64 { return (r.totals().acked - r.withdrawn()) * subs }
	if sc, ok := r.writtenCounter(); ok {
		r.stored = r.settleStored(ctx, sc, func() int64 { return r.totals().acked })
		want = func() int64 {
			if n, ok := r.stored.settled(); ok {
				return n * subs
			}
			select {
			case <-r.stored.done: // the driver failed: acknowledgements only
				return r.totals().acked * subs
			default:
				return math.MaxInt64
			}
		}
	}
	caughtUp := func() bool { return r.distinct() >= want() }
	if caughtUp() {
		return nil
	}
	if c.sampleUntil(ctx, results.Drain, nil, caughtUp, time.Time{}) == conditionMet {
		return nil
	}
	of := fmt.Sprintf("%d of %d messages received", r.distinct(), want())
	if want() == math.MaxInt64 {
		of = fmt.Sprintf("%d messages received; the broker's count of stored messages had not settled", r.distinct())
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("drain: consumers did not catch up within %s: %s", bound, of)
	}
	return fmt.Errorf("drain abandoned: %s", of)
}

// writtenCounter returns the driver's count of the messages written to
// the run's topics, when it has one and the count can be checked against
// the acknowledgements: not on existing topics, which held messages
// before, nor for transactional producers, whose every transaction also
// writes a commit or abort marker to each partition it touched, nor in
// runs with faults when the broker's count starts again at a restart.
func (r *run) writtenCounter() (driver.WrittenCounter, bool) {
	sc, ok := r.cfg.Driver.(driver.WrittenCounter)
	if rc, resets := sc.(driver.ResettingWrittenCounter); resets && rc.WrittenResets() && len(r.cfg.Faults) > 0 {
		return nil, false
	}
	return sc, ok && len(r.cfg.ExistingTopics) == 0 && !r.w.Transactional()
}

// distinct is the number of different messages the subscriptions received,
// summed over them.
func (r *run) distinct() int64 {
	var n int64
	for _, s := range r.subs {
		n += s.deliver.Distinct()
	}
	return n
}
