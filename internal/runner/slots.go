package runner

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// slotPool is the free list of one producer's message slots. Acknowledgement
// callbacks return slots one at a time; the producer takes every returned
// slot at once when it runs out, so the two sides meet once per batch rather
// than once per message (a channel per message cost a lock handover and
// often a goroutine wake-up on each side).
type slotPool struct {
	mu      sync.Mutex
	freed   []int // returned since the producer last took them
	waiting bool  // the producer is blocked in take
	wake    chan struct{}
	// blocked is the time take spent waiting for a slot, in nanoseconds:
	// the time the in-flight window was full.
	blocked atomic.Int64
}

func newSlotPool(n int) *slotPool {
	p := &slotPool{freed: make([]int, n), wake: make(chan struct{}, 1)}
	for i := range p.freed {
		p.freed[i] = i
	}
	return p
}

// put returns a slot. It never blocks.
func (p *slotPool) put(slot int) {
	p.mu.Lock()
	p.freed = append(p.freed, slot)
	wake := p.waiting
	p.waiting = false
	p.mu.Unlock()
	if wake {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// take returns every slot returned since the last take, reusing stock's
// storage (stock must be empty), waiting until there is at least one. It
// returns false if ctx ends first.
func (p *slotPool) take(ctx context.Context, stock []int) ([]int, bool) {
	for {
		p.mu.Lock()
		if len(p.freed) > 0 {
			stock, p.freed = p.freed, stock[:0]
			p.mu.Unlock()
			return stock, true
		}
		p.waiting = true
		p.mu.Unlock()
		from := clock.Now()
		select {
		case <-p.wake:
			p.blocked.Add(clock.Now() - from)
		case <-ctx.Done():
			p.blocked.Add(clock.Now() - from)
			return stock, false
		}
	}
}

// markFree sets free[slot] for every slot in the free list.
func (p *slotPool) markFree(free []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, slot := range p.freed {
		free[slot] = true
	}
}
