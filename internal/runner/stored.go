package runner

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// storedSettle is how long the broker's stored count must stay unchanged,
// below the acknowledged count, before it is taken as final. A replicated
// broker may acknowledge a message before its replicas hold it (Kafka with
// acks=1) and count it as stored only once they do (the high watermark):
// right after the last acknowledgement the count still rises for as long
// as the followers take to fetch, which is well under a second on a
// healthy cluster.
const storedSettle = 5 * time.Second

// storedBound bounds the whole wait for the broker's count.
const storedBound = 30 * time.Second

// storedPoll is how often the count is read while it settles.
const storedPoll = 200 * time.Millisecond

// storedCount is the broker's count of the run's messages, read until it
// settles. It is read once per run and shared by the drain and the final
// accounting.
type storedCount struct {
	value atomic.Int64 // -1 until settled
	err   error        // set before value, when the driver failed
	done  chan struct{}
}

// settleStored starts reading the broker's count in the background. The
// count is final once it reaches acked() (the run's acknowledged messages,
// read at each poll), or once it stayed unchanged for storedSettle, or when
// storedBound or ctx ends (then the last count read is kept).
func (r *run) settleStored(ctx context.Context, sc driver.WrittenCounter, acked func() int64) *storedCount {
	s := &storedCount{done: make(chan struct{})}
	s.value.Store(-1)
	go func() {
		defer close(s.done)
		n, err := settle(ctx, func(ctx context.Context) (int64, error) { return r.storedMessages(ctx, sc) }, acked)
		if err != nil {
			s.err = err
			return
		}
		s.value.Store(n)
	}()
	return s
}

// settle polls count until it reaches acked(), stays unchanged for
// storedSettle, or storedBound or ctx ends; it returns the last count.
func settle(ctx context.Context, count func(context.Context) (int64, error), acked func() int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, storedBound)
	defer cancel()
	last, err := count(ctx)
	if err != nil {
		return 0, err
	}
	since := time.Now()
	tick := time.NewTicker(storedPoll)
	defer tick.Stop()
	for last < acked() && time.Since(since) < storedSettle {
		select {
		case <-ctx.Done():
			return last, nil
		case <-tick.C:
		}
		n, err := count(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return last, nil
			}
			return 0, err
		}
		if n != last {
			last, since = n, time.Now()
		}
	}
	return last, nil
}

// settled returns the count once it is final: ok is false while it is
// still settling.
func (s *storedCount) settled() (n int64, ok bool) {
	n = s.value.Load()
	return n, n >= 0
}

// wait returns the final count, or the driver's error, once it is known.
func (s *storedCount) wait() (int64, error) {
	<-s.done
	if s.err != nil {
		return 0, s.err
	}
	return s.value.Load(), nil
}

// storedMessages asks the broker how many messages the run's topics hold.
func (r *run) storedMessages(ctx context.Context, sc driver.WrittenCounter) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stored int64
	for _, topic := range r.topics {
		n, err := sc.Written(ctx, topic)
		if err != nil {
			return 0, err
		}
		stored += n
	}
	return stored, nil
}
