// Package pacer decides when each message is due. Schedules are absolute: the
// i-th send is due where the integral of the target rate from the start
// reaches i, so a late send never shifts the sends after it and the achieved
// rate cannot drift. A sender that is behind sends at once; its latency still
// counts from the intended time.
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
}

// Profile is a target rate over time, for all producers together: its
// Due(i) is the first offset at which Sends reaches i. Implementations are
// immutable and safe for concurrent use.
type Profile interface {
	Pacer
	// Sends returns the sends due in [0, t): the integral of the target
	// rate, in sends, from the start to offset t (0 for t <= 0).
	Sends(t time.Duration) float64
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
	_ Profile = Constant{}
	_ Pacer   = Unlimited{}
	_ Pacer   = share{}
)

// Due implements Pacer.
func (c Constant) Due(i uint64) time.Duration {
	return c.Phase + time.Duration(math.Round(float64(i)*1e9/c.PerSecond))
}

// Sends implements Profile.
func (c Constant) Sends(t time.Duration) float64 {
	return max(0, seconds(t-c.Phase)*c.PerSecond)
}

// Unlimited is the max-rate schedule: every send is due immediately.
type Unlimited struct{}

// Due implements Pacer; it always returns -1.
func (Unlimited) Due(uint64) time.Duration { return -1 }

// Split divides a total constant rate over n producers (see Share). A total
// of 0 or less means unlimited for everyone.
func Split(total float64, n, k int) Pacer {
	if total <= 0 {
		return Unlimited{}
	}
	return Share(Constant{PerSecond: total}, n, k)
}

// Share is producer k's part of profile p shared by n producers: the
// profile's sends k, k+n, k+2n and so on, so that the producers interleave
// and together send exactly p's schedule. A nil p, or n of 0 or less,
// means unlimited.
func Share(p Profile, n, k int) Pacer {
	if p == nil || n <= 0 {
		return Unlimited{}
	}
	if c, ok := p.(Constant); ok {
		// The same schedule without an indirection per send: producer k
		// sends at the rate's n-th part, shifted by k of the total's
		// intervals.
		per := c.PerSecond / float64(n)
		return Constant{PerSecond: per, Phase: c.Phase + time.Duration(float64(k)/float64(n)*1e9/per)}
	}
	return share{p: p, n: uint64(n), k: uint64(k)}
}

// share is Share of a profile other than Constant.
type share struct {
	p    Profile
	n, k uint64
}

// Due implements Pacer.
func (s share) Due(i uint64) time.Duration { return s.p.Due(i*s.n + s.k) }

// TargetRate returns p's mean target rate over [from, to), in sends per
// second; 0 when the stretch is empty.
func TargetRate(p Profile, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	return (p.Sends(to) - p.Sends(from)) / seconds(to-from)
}

// seconds converts d to seconds.
func seconds(d time.Duration) float64 { return float64(d) / 1e9 }

// maxDue caps an intended offset (146 years), so that a start plus an
// offset never overflows, however slow the rate.
const maxDue = time.Duration(1 << 62)

// offset converts seconds to a Duration, rounded to the nanosecond and at
// most maxDue.
func offset(s float64) time.Duration {
	if ns := math.Round(s * 1e9); ns < float64(maxDue) {
		return time.Duration(ns)
	}
	return maxDue
}
