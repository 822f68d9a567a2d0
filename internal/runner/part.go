package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Part makes a run one process's share of a run spread over several: the
// same workload, run id and topics everywhere, each process running the
// producers and consumers the Part names. Producer ids and consumer
// indices are global, so every message names its producer the same way
// in every process, rates and message limits split exactly as in one
// process, and the subscriptions' records merge exactly
// (accounting.Subscription.Merge).
//
// In a Part the run creates and deletes no topics, asks the broker for no
// stored count and reconciles nothing: whoever coordinates the parts does
// that with the records the run leaves in Outcomes and Deliveries.
type Part struct {
	// Topics are the run's topics, one per workload topic, created by the
	// coordinator.
	Topics []string
	// Producers are the global ids of the producers to run (0 to
	// Workload.Producers()-1; producer i writes to topic i mod topics).
	Producers []int
	// Consumers are the global indices of the consumers to run, numbered
	// topic by topic, then subscription, then member: consumer
	// (t*SubscriptionsPerTopic+s)*ConsumersPerSubscription+m.
	Consumers []int
	// SkewNanos, if set, is added to every end-to-end latency of a
	// message by the producer of that index: the sender's clock minus this
	// process's, so that latencies across hosts are on one clock.
	SkewNanos []int64
	// Ready is called once the clients are set up; it blocks until every
	// part is ready and returns the instant (this process's clock.Now) at
	// which the run's clock starts, the same moment in every part; an
	// error abandons the run.
	Ready func(ctx context.Context) (startAt int64, err error)
	// SentAll is called when this part's producers have sent their message
	// limit (at once if it has none).
	SentAll func()
	// AllSent is closed when every part's producers have sent their
	// message limit: the run then ends as one whose producers finished.
	AllSent <-chan struct{}
	// Draining, if set, is called when this part's producers have stopped
	// and the run waits for CaughtUp.
	Draining func()
	// CaughtUp is closed when every subscription, over all parts, has
	// received every message: the drain is over.
	CaughtUp <-chan struct{}

	// StartLate, set by the run, is how long after startAt the run's
	// clock started here (the process woke late).
	StartLate time.Duration
	// Outcomes, set by the run, hold every producer's outcome by global
	// id; those of other parts are zero.
	Outcomes []accounting.Outcome
	// Deliveries, set by the run, hold each subscription's deliveries to
	// this part's consumers, in subscription order (topic, then
	// subscription).
	Deliveries []*accounting.Subscription

	r *run
}

// Progress returns how many different messages this part's consumers
// received, summed over subscriptions, and how many of its producers'
// messages were acknowledged; zeros before the run set up its clients.
// Safe for concurrent use.
func (p *Part) Progress() (distinct, acked int64) {
	if p.r == nil || !p.r.consumersReady.Load() {
		return 0, 0
	}
	return p.r.distinct(), p.r.totals().acked
}

// check reports a Part that does not fit the workload.
func (p *Part) check(producers, consumers, topics int) error {
	if len(p.Topics) != topics {
		return fmt.Errorf("the part names %d topics, the workload has %d", len(p.Topics), topics)
	}
	for _, ids := range []struct {
		what string
		list []int
		n    int
	}{{"producer", p.Producers, producers}, {"consumer", p.Consumers, consumers}} {
		seen := map[int]bool{}
		for _, id := range ids.list {
			if id < 0 || id >= ids.n || seen[id] {
				return fmt.Errorf("%s %d is not one of the workload's %d, or is named twice", ids.what, id, ids.n)
			}
			seen[id] = true
		}
	}
	if p.Ready == nil || p.SentAll == nil || p.AllSent == nil || p.CaughtUp == nil {
		return fmt.Errorf("a part needs Ready, SentAll, AllSent and CaughtUp")
	}
	return nil
}

// runsProducer reports whether the run makes producer id.
func (r *run) runsProducer(id int) bool {
	return r.part == nil || slices.Contains(r.part.Producers, id)
}

// runsConsumer reports whether the run makes consumer index i.
func (r *run) runsConsumer(i int) bool {
	return r.part == nil || slices.Contains(r.part.Consumers, i)
}

// waitForStart asks the part's coordinator for the start instant and
// sleeps until it; it returns the run's origin.
func (r *run) waitForStart(ctx context.Context) (int64, error) {
	startAt, err := r.part.Ready(ctx)
	if err != nil {
		return 0, err
	}
	if d := time.Duration(startAt - clock.Now()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-t.C:
		}
	}
	r.part.StartLate = max(0, time.Duration(clock.Now()-startAt))
	return startAt, nil
}

// keepRecords leaves the producers' outcomes and the subscriptions'
// records in the part, for the coordinator to reconcile.
func (r *run) keepRecords() {
	p := r.part
	p.Outcomes = make([]accounting.Outcome, r.w.Producers())
	for _, pw := range r.producers {
		p.Outcomes[pw.id] = pw.outcome()
	}
	for _, s := range r.subs {
		p.Deliveries = append(p.Deliveries, s.deliver)
	}
}

// partShare is the load shape of one process's share of a distributed
// run: timed phases as in timed, which end as a run whose producers
// finished only once every part's have (Part.AllSent), and a drain that
// lasts until the coordinator says every subscription caught up
// (Part.CaughtUp).
type partShare struct{ r *run }

// finished implements executor: once this part's producers have sent
// their limit it tells the coordinator (Part.SentAll), and the channel
// closes when every part's have.
func (e partShare) finished(ctx context.Context, producers *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		producers.Wait()
		if ctx.Err() != nil {
			return // stopped, not finished: no limit was sent
		}
		e.r.part.SentAll()
		select {
		case <-e.r.part.AllSent:
			close(done)
		case <-ctx.Done():
		}
	}()
	return done
}

// phases implements executor.
func (e partShare) phases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool) {
	e.r.resumeConsumers()
	return e.r.timedPhases(ctx, c, finished)
}

// drain implements executor: it waits, sampling meanwhile, until the
// coordinator says every subscription caught up (Part.CaughtUp) or ctx
// ends (bound is its timeout, for the error).
func (e partShare) drain(ctx context.Context, c *collector, bound time.Duration) error {
	r := e.r
	if r.part.Draining != nil {
		r.part.Draining()
	}
	switch c.sampleUntil(ctx, results.Drain, r.part.CaughtUp, nil, time.Time{}) {
	case channelClosed:
		return nil
	case interruptedStop:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("drain: the subscriptions did not catch up within %s: this part's consumers received %d messages", bound, r.distinct())
		}
	}
	return fmt.Errorf("drain abandoned: this part's consumers received %d messages", r.distinct())
}
