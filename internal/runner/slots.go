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
	// the time the in-flight window was full. waitingFrom is the clock
	// time at which the wait under way began (0 when take is not
	// waiting), longest the longest finished wait.
	blocked, waitingFrom, longest atomic.Int64
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
		p.waitingFrom.Store(from)
		select {
		case <-p.wake:
			p.endWait(from)
		case <-ctx.Done():
			p.endWait(from)
			return stock, false
		}
	}
}

// endWait adds the wait that began at from to the blocked time.
func (p *slotPool) endWait(from int64) {
	d := clock.Now() - from
	p.blocked.Add(d)
	p.waitingFrom.Store(0)
	if d > p.longest.Load() {
		p.longest.Store(d)
	}
}

// blockedUntil returns the time spent waiting for a slot until now (clock
// ns), a wait under way included: an in-flight window full to the end of
// an interval counts in that interval. Safe for concurrent use.
func (p *slotPool) blockedUntil(now int64) int64 {
	b := p.blocked.Load()
	if from := p.waitingFrom.Load(); from > 0 && now > from {
		b += now - from
	}
	return b
}

// longestUntil returns the longest wait for a slot until now, a wait
// under way included. Safe for concurrent use.
func (p *slotPool) longestUntil(now int64) int64 {
	l := p.longest.Load()
	if from := p.waitingFrom.Load(); from > 0 && now > from {
		l = max(l, now-from)
	}
	return l
}

// markFree sets free[slot] for every slot in the free list.
func (p *slotPool) markFree(free []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, slot := range p.freed {
		free[slot] = true
	}
}
