package pacer

import (
	"math"
	"time"
)

// Sine is a rate that swings around Mean by Amplitude sends per second,
// once per Period: Mean + Amplitude*sin(2*pi*t/Period), starting at Mean
// and rising. Mean and Period must be positive and Amplitude between 0
// and Mean.
type Sine struct {
	Mean, Amplitude float64
	Period          time.Duration
}

var _ Profile = Sine{}

// Sends implements Profile: Mean*t + Amplitude*Period/(2*pi)*(1 -
// cos(2*pi*t/Period)).
func (s Sine) Sends(t time.Duration) float64 {
	if t <= 0 {
		return 0
	}
	return s.within(seconds(t))
}

// within is Sends at x seconds.
func (s Sine) within(x float64) float64 {
	p := seconds(s.Period)
	return s.Mean*x + s.Amplitude*p/(2*math.Pi)*(1-math.Cos(2*math.Pi*x/p))
}

// Due implements Pacer. Whole periods are counted exactly; within one,
// Newton's method, kept inside a shrinking bracket, finds the time to
// well under a nanosecond.
func (s Sine) Due(i uint64) time.Duration {
	p := seconds(s.Period)
	pass := s.Mean * p
	x := float64(i)
	k := math.Floor(x / pass)
	if x -= k * pass; x >= pass { // rounding
		k, x = k+1, x-pass
	}
	lo, hi, t := 0.0, p, x/s.Mean
	for range 100 {
		f := s.within(t) - x
		if f < 0 {
			lo = t
		} else {
			hi = t
		}
		next := (lo + hi) / 2
		if rate := s.Mean + s.Amplitude*math.Sin(2*math.Pi*t/p); rate > 0 {
			step := f / rate
			if math.Abs(step) < 1e-10 {
				t -= step
				break
			}
			if n := t - step; n > lo && n < hi {
				next = n
			}
		}
		if hi-lo < 1e-10 {
			t = next
			break
		}
		t = next
	}
	return offset(k*p + t)
}
