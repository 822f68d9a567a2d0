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
// often a goroutine wake-up on each side). A producer blocked on a full
// window is woken when a sixteenth of the window is free, not at the first
// slot: the rest is still in flight, so the broker is kept as busy, and a
// window's worth of acknowledgements costs one wake-up rather than one per
// driver batch (with Redis pipelines of 100, the futex calls of those
// wake-ups were a tenth of the client's CPU).
type slotPool struct {
	mu      sync.Mutex
	freed   []int // returned since the producer last took them
	waiting bool  // the producer is blocked in take
	resume  int   // slots freed that wake a waiting producer
	wake    chan struct{}
	// blocked is the time take spent waiting for slots, in nanoseconds:
	// the time the producer was held back by a full in-flight window. waitingFrom is the clock
	// time at which the wait under way began (0 when take is not
	// waiting), longest the longest finished wait.
	blocked, waitingFrom, longest atomic.Int64
}

func newSlotPool(n int) *slotPool {
	p := &slotPool{freed: make([]int, n), resume: max(1, n/16), wake: make(chan struct{}, 1)}
	for i := range p.freed {
		p.freed[i] = i
	}
	return p
}

// put returns a slot. It never blocks.
func (p *slotPool) put(slot int) {
	p.mu.Lock()
	p.freed = append(p.freed, slot)
	wake := p.waiting && len(p.freed) >= p.resume
	if wake {
		p.waiting = false
	}
	p.mu.Unlock()
	if wake {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// take returns every slot returned since the last take, reusing stock's
// storage (stock must be empty), waiting, when there is none, until a
// sixteenth of the slots are back. It returns false if ctx ends first.
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
