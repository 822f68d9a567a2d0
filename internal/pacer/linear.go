package pacer

import (
	"math"
	"sort"
	"time"
)

// Point is one point of a rate curve: the target rate, in sends per second,
// at Seconds from the start.
type Point struct {
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"rate"`
}

// NewRamp returns a rate that goes linearly from from to to over over, then
// holds at to. from must not be negative, to must be positive and over
// positive.
func NewRamp(from, to float64, over time.Duration) Profile {
	return newLinear([]Point{{0, from}, {seconds(over), to}}, 0)
}

// Step is one step of a stepped rate: Rate sends per second for For.
type Step struct {
	Rate float64
	For  time.Duration
}

// NewSteps returns a rate that holds each step's rate for its length, one
// after another, then holds the last step's rate. Rates must not be
// negative, the last must be positive, and every length but the last's
// must be positive.
func NewSteps(steps []Step) Profile {
	var points []Point
	at := 0.0
	for _, s := range steps {
		points = append(points, Point{at, s.Rate})
		at += seconds(s.For)
		points = append(points, Point{at, s.Rate})
	}
	return newLinear(points, 0)
}

// NewBursts returns a rate that repeats rate for on, then offRate for off.
// rate and on and off must be positive, offRate must not be negative.
func NewBursts(rate, offRate float64, on, off time.Duration) Profile {
	on2, period := seconds(on), seconds(on+off)
	return newLinear([]Point{{0, rate}, {on2, rate}, {on2, offRate}, {period, offRate}}, period)
}

// NewCurve returns a rate that follows points, linearly between
// neighbours, and holds the last point's rate after it. Points must pass
// CheckCurve.
func NewCurve(points []Point) Profile { return newLinear(points, 0) }

// linear is a piecewise-linear rate: segments one after another from 0 to
// end, then, if period is set, the same again every period, or else the
// rate hold for ever.
type linear struct {
	segs   []segment
	end    float64 // seconds
	pass   float64 // sends due in [0, end)
	hold   float64 // the rate after end, unless periodic
	period float64 // seconds; 0 when not periodic
}

// segment is a stretch of a linear rate: from sends per second at start
// (seconds), changing by slope per second, for length seconds; before
// sends are due before it and sends within it.
type segment struct {
	start, length, from, slope float64
	before, sends              float64
}

var _ Profile = linear{}

// newLinear makes the linear rate through points (at non-decreasing
// times from 0; two points at one time make a step), repeating every
// period seconds if period is positive.
func newLinear(points []Point, period float64) linear {
	l := linear{hold: points[len(points)-1].Rate, period: period}
	for j := 1; j < len(points); j++ {
		a, b := points[j-1], points[j]
		length := b.Seconds - a.Seconds
		if length <= 0 {
			continue
		}
		s := segment{start: a.Seconds, length: length, from: a.Rate, slope: (b.Rate - a.Rate) / length, before: l.pass}
		s.sends = (a.Rate + b.Rate) / 2 * length
		l.segs = append(l.segs, s)
		l.pass += s.sends
		l.end = b.Seconds
	}
	return l
}

// Due implements Pacer.
func (l linear) Due(i uint64) time.Duration {
	x, base := float64(i), 0.0
	if l.period > 0 {
		k := math.Floor(x / l.pass)
		if x -= k * l.pass; x >= l.pass { // rounding
			k, x = k+1, x-l.pass
		}
		base = k * l.period
	}
	if x >= l.pass {
		return offset(base + l.end + (x-l.pass)/l.hold)
	}
	j := sort.Search(len(l.segs), func(j int) bool { return l.segs[j].before+l.segs[j].sends > x })
	s := l.segs[j]
	return offset(base + s.start + solve(s.from, s.slope, x-s.before))
}

// Sends implements Profile.
func (l linear) Sends(t time.Duration) float64 {
	x, base := seconds(t), 0.0
	if x <= 0 {
		return 0
	}
	if l.period > 0 {
		k := math.Floor(x / l.period)
		x, base = x-k*l.period, k*l.pass
	}
	if x >= l.end {
		return base + l.pass + (x-l.end)*l.hold
	}
	j := sort.Search(len(l.segs), func(j int) bool { return l.segs[j].start+l.segs[j].length > x })
	s := l.segs[j]
	dt := x - s.start
	return base + s.before + s.from*dt + s.slope*dt*dt/2
}

// solve returns the time t >= 0 at which a rate starting at from and
// changing by slope per second has sent x: from*t + slope*t*t/2 = x. The
// form avoids cancellation when slope is small or negative.
func solve(from, slope, x float64) float64 {
	if x <= 0 {
		return 0
	}
	return 2 * x / (from + math.Sqrt(max(0, from*from+2*slope*x)))
}
