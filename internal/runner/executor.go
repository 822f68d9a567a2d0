package runner

import (
	"context"
	"sync"
	"time"
)

// executor is one load shape: what ends the producing on its own, how the
// producing phases are sampled, and what the consumers must catch up with
// afterwards. The run drives whichever shape the workload and Config call
// for (newExecutor) through these three calls, in this order, from one
// goroutine; how fast each producer sends is its pacer's business, not the
// executor's.
type executor interface {
	// finished returns a channel that is closed when the producing is
	// over on its own (the message limit reached), or nil for a shape only
	// time or an interrupt ends. producers is done once every producer
	// goroutine has returned; ctx ends when the producers are stopped.
	finished(ctx context.Context, producers *sync.WaitGroup) <-chan struct{}
	// phases samples intervals from the producers' start until the shape's
	// phases are over, finished is closed or ctx ends. interrupted is true
	// when ctx ended first, sentAll when the producers sent their whole
	// message limit (the run is then measured to its last
	// acknowledgement).
	phases(ctx context.Context, c *collector, finished <-chan struct{}) (interrupted, sentAll bool)
	// drain waits, sampling intervals, until every subscription has
	// caught up or ctx ends; bound is ctx's timeout, for the error.
	drain(ctx context.Context, c *collector, bound time.Duration) error
}

var (
	_ executor = timed{}
	_ executor = backlog{}
	_ executor = consumeOnly{}
	_ executor = partShare{}
)

// newExecutor returns the load shape of r, once its setup made the
// producers and consumers: a process's share of a distributed run, a
// backlog test, a run without producers, or else a timed run.
func newExecutor(r *run) executor {
	switch {
	case r.part != nil:
		return partShare{r}
	case r.backlogMode():
		return backlog{r}
	case len(r.producers) == 0:
		return consumeOnly{r}
	}
	return timed{r}
}

// returned returns a channel closed once every producer goroutine in
// producers has returned.
func returned(producers *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { producers.Wait(); close(done) }()
	return done
}
