// Package pacer decides when each message is due. Schedules are absolute: the
// i-th send is due at a fixed offset from the start, so a late send never
// shifts the sends after it and the achieved rate cannot drift.
package pacer

import (
	"math"
	"time"
)

// Pacer answers when the i-th send (counting from 0) is due, as an offset
// from the start of the schedule. Implementations are immutable and safe for
// concurrent use.
type Pacer interface {
	// Due returns the intended send offset of send i. It returns a negative
	// duration when the schedule has no intended times (send as fast as
	// possible).
	Due(i uint64) time.Duration
	// Rate returns the target rate in sends per second, or 0 for unlimited.
	Rate() float64
}

// Constant is a fixed-rate schedule: send i is due at Phase + i/PerSecond.
type Constant struct {
	// PerSecond is the rate; it must be positive.
	PerSecond float64
	// Phase shifts the whole schedule, so that several producers sharing a
	// total rate interleave their sends instead of sending in lockstep.
	Phase time.Duration
}

var (
	_ Pacer = Constant{}
	_ Pacer = Unlimited{}
)

// Due implements Pacer.
func (c Constant) Due(i uint64) time.Duration {
	return c.Phase + time.Duration(math.Round(float64(i)*1e9/c.PerSecond))
}

// Rate implements Pacer.
func (c Constant) Rate() float64 { return c.PerSecond }

// Unlimited is the max-rate schedule: every send is due immediately.
type Unlimited struct{}

// Due implements Pacer; it always returns -1.
func (Unlimited) Due(uint64) time.Duration { return -1 }

// Rate implements Pacer; it returns 0.
func (Unlimited) Rate() float64 { return 0 }

// Split divides a total rate over n producers. Producer k gets an equal share
// with its schedule shifted by k/n of one interval. A total of 0 or less
// means unlimited for everyone.
func Split(total float64, n, k int) Pacer {
	if total <= 0 || n <= 0 {
		return Unlimited{}
	}
	per := total / float64(n)
	phase := time.Duration(float64(k) / float64(n) * 1e9 / per)
	return Constant{PerSecond: per, Phase: phase}
}
