package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
)

// reconcile compares each subscription's deliveries with the producers'
// outcomes and adds the result to cnt (see Reconcile).
func (r *run) reconcile(cnt *results.Counts) {
	outcomes := make([]accounting.Outcome, len(r.producers))
	for i, p := range r.producers {
		outcomes[i] = p.outcome()
	}
	records := make([]Record, len(r.subs))
	for i, sub := range r.subs {
		records[i] = Record{Name: sub.name, Topic: sub.topic, Deliveries: sub.deliver}
	}
	rr := Reread{Topics: r.topics, Ctx: r.cfg.Abandon, Timeout: r.cfg.RereadTimeout, Logf: r.logf, Before: sync.OnceFunc(r.closeConsumers)}
	rr.Driver, _ = r.cfg.Driver.(driver.Rereader)
	Reconcile(cnt, records, outcomes, len(r.topics), r.drained, rr)
}

// consumersCloseBound bounds the wait for the run's consumers to close
// before a re-read; the re-read goes ahead after it.
const consumersCloseBound = 30 * time.Second

// closeConsumers closes the run's consumers, so that nothing is delivered
// to them while the broker is read again and a queue takes back what
// they held unacknowledged; it waits at most consumersCloseBound, or
// until the run is abandoned.
func (r *run) closeConsumers() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range r.closers {
			c()
		}
	}()
	t := time.NewTimer(consumersCloseBound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.logf("the consumers did not close within %s; reading the broker again all the same", consumersCloseBound)
	case <-r.cfg.Abandon.Done():
	}
}

// Reread is how Reconcile proves a loss: a subscription that still misses
// acknowledged messages after a complete drain has what the broker holds
// for it read again, and only what that read does not find is lost.
type Reread struct {
	// Driver reads the broker again; nil if the driver cannot, and the
	// missing messages are then an unconfirmed loss.
	Driver driver.Rereader
	// Topics names the topics, by index.
	Topics []string
	// Ctx ends every re-read early when done (nil: never).
	Ctx context.Context
	// Timeout bounds each subscription's re-read (default
	// DefaultRereadTimeout).
	Timeout time.Duration
	// Logf, if set, says what is read again.
	Logf func(string, ...any)
	// Before, if set, is called before every re-read and must do its
	// work once: the runner closes its consumers, so that the broker
	// holds again what they had taken without acknowledging it.
	Before func()
}

// DefaultRereadTimeout bounds a subscription's re-read by default: time
// to read a few million messages again from a log.
const DefaultRereadTimeout = 2 * time.Minute

// errAllFound ends a re-read that found every missing message.
var errAllFound = errors.New("every missing message found")

// read reads again what the broker holds for rec's subscription, notes
// every missing acknowledged message it finds (accounting Found), and
// returns the evidence; missing is how many rec lacks.
func (rr Reread) read(rec Record, mine []accounting.Outcome, missing int64) *results.Reread {
	ev := &results.Reread{Missing: missing}
	if rr.Driver == nil || rec.Topic >= len(rr.Topics) {
		ev.Error = "the driver cannot read the broker again"
		return ev
	}
	if rr.Logf != nil {
		rr.Logf("subscription %s misses %d acknowledged messages after the drain: reading what the broker holds for it again", rec.Name, missing)
	}
	if rr.Before != nil {
		rr.Before()
	}
	parent, timeout := rr.Ctx, rr.Timeout
	if parent == nil {
		parent = context.Background()
	}
	if timeout <= 0 {
		timeout = DefaultRereadTimeout
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, timeout)
	defer stop()
	err := rr.Driver.Reread(ctx, rr.Topics[rec.Topic], rec.Name, func(v []byte) {
		ev.Read++
		h, err := payload.Parse(v)
		if err != nil || int(h.ProducerID) >= len(mine) || !mine[h.ProducerID].Acknowledged(h.Seq) {
			return
		}
		if rec.Deliveries.Found(h.ProducerID, h.Seq) {
			if ev.Found++; ev.Found == missing {
				cancel(errAllFound)
			}
		}
	})
	switch {
	case errors.Is(context.Cause(ctx), errAllFound), err == nil:
		ev.Complete = true
	case errors.Is(err, context.DeadlineExceeded):
		ev.Error = fmt.Sprintf("the re-read did not finish within %s", timeout)
	default:
		ev.Error = "re-read: " + err.Error()
	}
	return ev
}

// Record is one subscription's deliveries, for Reconcile.
type Record struct {
	Name       string
	Topic      int // index of its topic
	Deliveries *accounting.Subscription
}

// Reconcile compares each subscription's deliveries with the outcomes of
// the producers (indexed by producer id; producer i writes to topic i mod
// topics) and adds lost, duplicated and unexpected messages, and messages
// of aborted transactions received, to cnt. If the
// consumers were not drained (interrupted, timed out), missing messages may
// still be in the broker: they count as undelivered, not lost. After a
// complete drain, a subscription that misses messages is read again
// (see Reread): those found are delivered late, those not found in a
// complete re-read are lost, and the rest are an unconfirmed loss.
func Reconcile(cnt *results.Counts, records []Record, outcomes []accounting.Outcome, topics int, drained bool, rr Reread) {
	for _, sub := range records {
		// Only the producers writing to the subscription's topic count.
		mine := make([]accounting.Outcome, len(outcomes))
		for i := range outcomes {
			if i%topics == sub.Topic {
				mine[i] = outcomes[i]
			}
		}
		res := sub.Deliveries.Reconcile(mine)
		lost, undelivered, unconfirmed := int64(res.Lost), int64(0), int64(0)
		var evidence *results.Reread
		switch {
		case !drained:
			lost, undelivered = 0, lost
		case lost > 0:
			evidence = rr.read(sub, mine, lost)
			// The run's consumers may have received some meanwhile.
			res = sub.Deliveries.Reconcile(mine)
			lost = int64(res.Lost)
			if !evidence.Complete {
				lost, unconfirmed = 0, lost
			}
		}
		cnt.Subscriptions = append(cnt.Subscriptions, results.SubscriptionCounts{
			Name: sub.Name, Expected: int64(res.Expected), Delivered: int64(res.Delivered), Lost: lost,
			UnconfirmedLoss: unconfirmed, DeliveredLate: int64(res.Late), Undelivered: undelivered,
			Duplicated: res.Duplicated, FailedDelivered: int64(res.FailedDelivered), Unexpected: int64(res.Unexpected),
			AbortedRead: int64(res.AbortedRead), Reread: evidence,
		})
		cnt.Lost += lost
		cnt.UnconfirmedLoss += unconfirmed
		cnt.DeliveredLate += int64(res.Late)
		cnt.Undelivered += undelivered
		cnt.Duplicated += res.Duplicated
		cnt.FailedDelivered += int64(res.FailedDelivered)
		cnt.Unexpected += int64(res.Unexpected)
		cnt.AbortedRead += int64(res.AbortedRead)
	}
}
