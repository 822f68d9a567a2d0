package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// setupReportEvery is how often a setup that waits for consumers says
// what it waits for.
const setupReportEvery = 5 * time.Second

// setup checks the workload with the driver, builds the payloads, and
// creates topics, consumers and producers. It returns the topics it
// created, for teardown, also on error. It takes at most
// Config.SetupTimeout; an error for taking longer wraps ErrSetupTimeout.
func (r *run) setup(ctx context.Context) (created []string, err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.SetupTimeout, ErrSetupTimeout)
	defer cancel()
	defer func() {
		if err != nil && errors.Is(context.Cause(ctx), ErrSetupTimeout) {
			err = fmt.Errorf("%w of %s: %w", ErrSetupTimeout, r.cfg.SetupTimeout, err)
		}
	}()
	w, d := r.w, r.cfg.Driver
	if c, ok := d.(driver.Checker); ok {
		if err := c.Check(ctx, driver.CheckSpec{MessageSize: w.MaxMessageSize(), ExistingTopics: r.cfg.ExistingTopics}); err != nil {
			return nil, err
		}
	}
	// Payloads first: a workload that cannot have them leaves no topic.
	pool, err := payload.Generate(w.PayloadSpec())
	if err != nil {
		return nil, err
	}
	r.res.Payloads = payloadStats(w, pool)
	created, err = r.createTopics(ctx)
	if err != nil {
		return created, err
	}
	if err := r.startConsumers(ctx); err != nil {
		return created, err
	}
	return created, r.startProducers(ctx, pool.Payloads)
}

// createTopics creates the run's topics, unless it uses existing ones, and
// returns those it created, and, on error, the one that failed: a failed
// create (a timeout) may still leave the topic behind, which teardown
// then removes.
func (r *run) createTopics(ctx context.Context) ([]string, error) {
	var created []string
	if len(r.cfg.ExistingTopics) > 0 || r.part != nil {
		return nil, nil
	}
	for _, t := range r.topics {
		r.logf("creating topic %s (%d partitions)", t, r.w.PartitionsPerTopic)
		if r.cfg.Journal != nil {
			r.cfg.Journal.CreatingTopic(t)
		}
		if err := r.cfg.Driver.CreateTopic(ctx, driver.TopicSpec{Name: t, Partitions: r.w.PartitionsPerTopic, ReplicationFactor: r.w.ReplicationFactor}); err != nil {
			return append(created, t), err
		}
		created = append(created, t)
	}
	return created, nil
}

// startConsumers creates every subscription's consumers and waits until
// they have joined; for a backlog test, or on existing topics, it pauses
// them.
func (r *run) startConsumers(ctx context.Context) error {
	defer r.consumersReady.Store(true)
	groups, err := r.makeConsumers(ctx)
	if err != nil {
		return err
	}
	if err := r.settle(ctx, groups); err != nil {
		return err
	}
	if !r.backlogMode() && len(r.cfg.ExistingTopics) == 0 {
		return nil
	}
	for _, g := range groups {
		for _, c := range g.members {
			p, ok := c.(driver.Pauser)
			if !ok {
				return errors.New("backlog tests and existing topics need consumers that can pause; this driver's cannot")
			}
			p.Pause()
			r.pausers = append(r.pausers, p)
		}
	}
	return nil
}

// consumerGroup is one subscription's consumers in this process.
type consumerGroup struct {
	topic, sub string
	members    []driver.Consumer
}

// makeConsumers makes this process's consumers of every subscription, and
// the subscriptions' records, and returns the subscriptions that have
// consumers here.
func (r *run) makeConsumers(ctx context.Context) ([]consumerGroup, error) {
	w, d := r.w, r.cfg.Driver
	var groups []consumerGroup
	index := -1 // the consumer's global index
	for ti, t := range r.topics {
		for s := range w.SubscriptionsPerTopic {
			// Subscription names are unique per run, also on existing topics.
			g := consumerGroup{topic: t, sub: SubscriptionName(r.res.ID, ti, s)}
			rec := accounting.NewSubscription(w.Producers())
			r.subs = append(r.subs, subscription{name: g.sub, topic: ti, deliver: rec})
			for range w.ConsumersPerSubscription {
				if index++; !r.runsConsumer(index) {
					continue
				}
				st := newConsumerStats(rec, !r.cfg.NoLatencyRecording)
				if r.part != nil {
					st.skew = r.part.SkewNanos
				}
				if pt := w.ConsumerProcessingTime; pt != nil {
					st.work = pt.NewWorker(w.Seed, index)
				}
				// A run's own topics hold only its messages, and a
				// consume-only run reads what its topics hold: both
				// from the earliest.
				c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: t, Subscription: g.sub, Start: driver.StartEarliest, ReadCommitted: w.Transactional()}, st.onMessage)
				if err != nil {
					return nil, fmt.Errorf("consumer for topic %d: %w", ti, err)
				}
				r.consumers = append(r.consumers, st)
				// Closed once: before a re-read of the broker
				// (closeConsumers), or at teardown.
				r.closers = append(r.closers, sync.OnceFunc(c.Close))
				g.members = append(g.members, c)
			}
			if len(g.members) > 0 {
				groups = append(groups, g)
			}
		}
	}
	return groups, nil
}

// settle waits until every consumer is ready and every subscription has
// all its members, saying every setupReportEvery what it still waits for.
func (r *run) settle(ctx context.Context, groups []consumerGroup) error {
	if len(groups) == 0 {
		return nil
	}
	// A part's consumers share their subscriptions with other parts':
	// the subscription is settled with all of them.
	members := func(g consumerGroup) int {
		if r.part != nil {
			return r.w.ConsumersPerSubscription
		}
		return len(g.members)
	}
	// settled counts the groups done; the reports read it.
	var settled atomic.Int64
	r.logf("waiting for %d consumers in %d groups to join (%s)", len(r.consumers), len(groups), setupLeft(ctx, r.cfg.SetupTimeout))
	stop := r.reportEvery(setupReportEvery, func() string {
		i := int(settled.Load())
		if i >= len(groups) {
			return ""
		}
		g := groups[i]
		return fmt.Sprintf("still waiting for consumers to join: group %s (topic %s, members: %d); %d of %d groups settled (%s)",
			g.sub, g.topic, members(g), i, len(groups), setupLeft(ctx, r.cfg.SetupTimeout))
	})
	defer stop()
	for _, g := range groups {
		for _, c := range g.members {
			if err := c.Ready(ctx); err != nil {
				return fmt.Errorf("subscription %s: %w", g.sub, err)
			}
		}
		if wt, ok := r.cfg.Driver.(driver.SubscriptionWaiter); ok {
			if err := wt.WaitSubscription(ctx, g.topic, g.sub, members(g)); err != nil {
				return err
			}
		}
		settled.Add(1)
	}
	return nil
}

// setupLeft says how much of the setup's bound is left.
func setupLeft(ctx context.Context, bound time.Duration) string {
	deadline, ok := ctx.Deadline()
	if !ok {
		return "no time limit"
	}
	return fmt.Sprintf("%s of the setup's %s left", time.Until(deadline).Round(time.Second), bound)
}

// reportEvery logs what() every interval, unless it is empty, until the
// returned stop is called. what is called from another goroutine.
func (r *run) reportEvery(interval time.Duration, what func() string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if s := what(); s != "" {
					r.logf("%s", s)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// InFlightWindow returns how many messages each of producers producers
// keeps in flight at most, for messages of size bytes and a bound of
// maxBytes unacknowledged bytes per producer (Config.MaxInFlightBytes):
// at most 16384, measured on 100-byte messages at max rate, where 65536
// slots spread each message over cold cache lines and cost 20-30% more
// CPU per message for no more throughput (bench/README.md); and the
// producers' message copies together within 1 GiB.
func InFlightWindow(size, producers, maxBytes int) int {
	perProducer := min(maxBytes, (1<<30)/max(producers, 1))
	return max(16, min(16384, perProducer/max(size, 1)))
}

// startProducers creates the producers, each with its share of the
// workload's pacing (pacer.Share) and of the message limit, and its
// in-flight window.
func (r *run) startProducers(ctx context.Context, pool [][]byte) error {
	w := r.w
	n := w.Producers()
	inFlight := InFlightWindow(w.MessageSize, n, r.cfg.MaxInFlightBytes)
	for i := range n {
		if !r.runsProducer(i) {
			continue
		}
		keys, err := payload.NewKeys(w.Keys(), w.Seed+uint64(i))
		if err != nil {
			return err
		}
		limit := int64(0)
		if w.MessageLimit > 0 {
			limit = w.MessageLimit / int64(n)
			if int64(i) < w.MessageLimit%int64(n) {
				limit++
			}
		}
		pw := newProducerWorker(uint32(i), pacer.Share(r.pacing, n, i), limit, keys, pool, inFlight)
		pw.record = !r.cfg.NoLatencyRecording
		spec := driver.ProducerSpec{Topic: r.topics[i%len(r.topics)], MaxMessageBytes: w.MaxMessageSize(), MaxInFlight: inFlight, Transactional: w.Transactional()}
		p, err := r.cfg.Driver.NewProducer(ctx, spec, pw.onAck)
		if err != nil {
			return fmt.Errorf("producer %d: %w", i, err)
		}
		pw.prod = p
		if w.Transactional() {
			tx, ok := p.(driver.Transactor)
			if !ok {
				p.Close()
				return fmt.Errorf("producer %d: the driver made a producer without transactions for a transactional workload", i)
			}
			pw.txn = newTransactions(w.Transactions, w.Seed, uint32(i), tx)
		}
		r.producers = append(r.producers, pw)
	}
	return nil
}

// payloadStats describes the pool of a run whose payloads vary in size or
// compress to a target; nil for the others.
func payloadStats(w *workload.Workload, pool payload.Pool) *results.Payloads {
	if w.MessageSizes == nil && w.Compressibility == nil {
		return nil
	}
	st := &results.Payloads{Count: len(pool.Payloads), MinBytes: math.MaxInt, CompressionRatio: pool.Ratio}
	var sum float64
	for _, p := range pool.Payloads {
		st.MinBytes, st.MaxBytes = min(st.MinBytes, len(p)), max(st.MaxBytes, len(p))
		sum += float64(len(p))
	}
	st.MeanBytes = sum / float64(len(pool.Payloads))
	if w.Compressibility != nil {
		st.Codec = w.Compressibility.Codec
	}
	return st
}
