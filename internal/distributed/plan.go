package distributed

import (
	"fmt"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// Placement says how a workload's producers and consumers are spread over
// the workers.
type Placement string

// Placements.
const (
	// Spread deals producers out in turn from the first worker (producer
	// i to worker i mod W) and consumers from the last (consumer j to
	// worker W-1-(j mod W)): load as even as the counts allow, and no
	// worker idle while there are as many producers and consumers
	// together as workers. A message may be consumed on another worker
	// than the one that sent it, so its end-to-end latency is corrected
	// by the measured clock offsets and carries their error.
	Spread Placement = "spread"
	// ByTopic puts each topic's producers and consumers on one worker
	// (topic t on worker t mod W): every message is consumed where it was
	// sent, and its end-to-end latency is read on one clock, with no
	// clock error. It needs at least as many topics as workers.
	ByTopic Placement = "by-topic"
)

// ParsePlacement returns the placement named s.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(s); p {
	case Spread, ByTopic:
		return p, nil
	}
	return "", fmt.Errorf("placement %q: use %q or %q", s, Spread, ByTopic)
}

// CheckSpread reports whether w can be spread over n workers with
// placement p: every worker must get something to run.
func CheckSpread(w *workload.Workload, n int, p Placement) error {
	if p == ByTopic && w.Topics < n {
		return fmt.Errorf("placement %q needs at least one topic per worker: the workload has %d topics for %d workers", ByTopic, w.Topics, n)
	}
	_, err := plan(w, n, p)
	return err
}

// share is one worker's producers and consumers, by global id.
type share struct {
	producers, consumers []int
}

// plan divides w's producers and consumers among n workers. Every worker
// must get something to run.
func plan(w *workload.Workload, n int, p Placement) ([]share, error) {
	shares := make([]share, n)
	producers := w.Producers()
	perTopic := w.SubscriptionsPerTopic * w.ConsumersPerSubscription
	consumers := w.Topics * perTopic
	for i := range producers {
		k := i % n
		if p == ByTopic {
			k = (i % w.Topics) % n
		}
		shares[k].producers = append(shares[k].producers, i)
	}
	for j := range consumers {
		k := n - 1 - j%n
		if p == ByTopic {
			k = (j / perTopic) % n
		}
		shares[k].consumers = append(shares[k].consumers, j)
	}
	for k, s := range shares {
		if len(s.producers) == 0 && len(s.consumers) == 0 {
			most := producers + consumers
			if p == ByTopic {
				most = w.Topics
			}
			return nil, fmt.Errorf("worker %d of %d would run nothing: the workload has %d producers and %d consumers on %d topics, enough for %d workers with placement %q; give fewer workers, or more producers and consumers (producersPerTopic, consumersPerSubscription)",
				k+1, n, producers, consumers, w.Topics, most, p)
		}
	}
	return shares, nil
}
