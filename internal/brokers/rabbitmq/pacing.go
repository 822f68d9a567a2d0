package rabbitmq

import (
	"context"
	"sync"
	"time"
)

// pacer paces the creation of a driver's producers, or of its
// consumers, as OMB's RabbitMQ driver does with
// producerCreationBatchSize and producerCreationDelay (and the consumer
// pair): in batches of size, each batch starting delay after the one
// before, the first delay after the first creation was asked. A nil
// pacer, or one of size 0, does not pace. It is safe for concurrent
// use.
//
// OMB's driver also waits for a batch to be created before it starts
// the next, and retries a failed creation without end; here a batch's
// start is its time slot, and a failed creation fails the run.
type pacer struct {
	size  int
	delay time.Duration

	mu    sync.Mutex
	asked int       // creations asked so far
	first time.Time // when the first was asked
}

// wait returns when the next creation may start, or ctx's error if ctx
// ends first.
func (p *pacer) wait(ctx context.Context) error {
	if p == nil || p.size <= 0 || p.delay <= 0 {
		return nil
	}
	p.mu.Lock()
	if p.asked == 0 {
		p.first = time.Now()
	}
	at := p.first.Add(time.Duration(p.asked/p.size+1) * p.delay)
	p.asked++
	p.mu.Unlock()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
