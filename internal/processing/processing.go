// Package processing simulates the work an application does with each
// message it consumes: a time per message, fixed or drawn from a
// distribution, during which the consumer takes no other message. A
// consumer that spends it receives at most 1/mean messages per second,
// and what the broker holds for it grows when more is published.
package processing

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Time is a consumer's processing time per message: exactly one of
// Fixed, Uniform and LogNormal is set.
type Time struct {
	Fixed     time.Duration `json:"fixedNs,omitempty"`
	Uniform   *Uniform      `json:"uniform,omitempty"`
	LogNormal *LogNormal    `json:"logNormal,omitempty"`
	// Seed seeds the draws of a distribution (0: the workload's seed);
	// consumer k of a run draws its own sequence from Seed and k, so a
	// run with the same seed draws the same times.
	Seed uint64 `json:"seed,omitempty"`
}

// Uniform draws times evenly between Min and Max.
type Uniform struct {
	Min time.Duration `json:"minNs"`
	Max time.Duration `json:"maxNs"`
}

// LogNormal draws times whose logarithm is normal: Median, and Sigma the
// standard deviation of the natural logarithm (0.5 spreads the middle
// half over about 0.7x to 1.4x the median), clamped to Max when Max is
// set.
type LogNormal struct {
	Median time.Duration `json:"medianNs"`
	Sigma  float64       `json:"sigma"`
	Max    time.Duration `json:"maxNs,omitempty"`
}

// MaxTime bounds every processing time: a consumer that takes longer per
// message is a stopped consumer, which pausing measures better.
const MaxTime = time.Minute

// Validate returns an error saying what is wrong with t, or nil. It names
// the field as the workload file does ("uniform.max").
func (t Time) Validate() error {
	shapes := 0
	for _, set := range []bool{t.Fixed != 0, t.Uniform != nil, t.LogNormal != nil} {
		if set {
			shapes++
		}
	}
	if shapes != 1 {
		return errors.New("give exactly one of fixed, uniform or logNormal")
	}
	inRange := func(field string, d time.Duration) error {
		if d < 0 || d > MaxTime {
			return fmt.Errorf("%s: must be between 0s and %s, got %s", field, MaxTime, d)
		}
		return nil
	}
	switch {
	case t.Uniform != nil:
		u := t.Uniform
		if err := errors.Join(inRange("uniform.min", u.Min), inRange("uniform.max", u.Max)); err != nil {
			return err
		}
		if u.Max < u.Min {
			return fmt.Errorf("uniform.max: %s is below its min %s", u.Max, u.Min)
		}
	case t.LogNormal != nil:
		l := t.LogNormal
		if err := errors.Join(inRange("logNormal.median", l.Median), inRange("logNormal.max", l.Max)); err != nil {
			return err
		}
		switch {
		case l.Median <= 0:
			return fmt.Errorf("logNormal.median: must be above 0s, got %s", l.Median)
		case !(l.Sigma > 0) || l.Sigma > 10:
			return fmt.Errorf("logNormal.sigma: must be above 0 and at most 10, got %v", l.Sigma)
		case l.Max != 0 && l.Max < l.Median:
			return fmt.Errorf("logNormal.max: %s is below its median %s", l.Max, l.Median)
		}
	default:
		return inRange("fixed", t.Fixed)
	}
	return nil
}

// Mean is the mean time of a valid t.
func (t Time) Mean() time.Duration {
	switch {
	case t.Uniform != nil:
		return (t.Uniform.Min + t.Uniform.Max) / 2
	case t.LogNormal != nil:
		l := t.LogNormal
		m, s := float64(l.Median), l.Sigma
		mean := m * math.Exp(s*s/2)
		if l.Max > 0 {
			// E[min(X, max)]: the mean below max, plus max times the
			// chance of reaching it.
			z := math.Log(float64(l.Max)/m) / s
			mean = mean*normalCDF(z-s) + float64(l.Max)*(1-normalCDF(z))
		}
		return time.Duration(math.Round(mean))
	}
	return t.Fixed
}

// String describes t for a summary: "4ms", "uniform 1ms to 3ms (mean
// 2ms)", "log-normal, median 2ms, sigma 0.5, at most 50ms (mean
// 2.266ms)"; means to the microsecond.
func (t Time) String() string {
	switch {
	case t.Uniform != nil:
		return fmt.Sprintf("uniform %s to %s (mean %s)", t.Uniform.Min, t.Uniform.Max, t.Mean().Round(time.Microsecond))
	case t.LogNormal != nil:
		l := t.LogNormal
		most := ""
		if l.Max > 0 {
			most = ", at most " + l.Max.String()
		}
		return fmt.Sprintf("log-normal, median %s, sigma %v%s (mean %s)", l.Median, l.Sigma, most, t.Mean().Round(time.Microsecond))
	}
	return t.Fixed.String()
}

// Ceiling is the most messages per second n consumers that each spend t
// per message receive; +Inf for a t of zero.
func (t Time) Ceiling(n int) float64 {
	return float64(n) * float64(time.Second) / float64(t.Mean())
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// draw returns the next time from t.
func (t Time) draw(rng *rand.Rand) time.Duration {
	switch {
	case t.Uniform != nil:
		u := t.Uniform
		return u.Min + time.Duration(rng.Int64N(int64(u.Max-u.Min)+1))
	case t.LogNormal != nil:
		l := t.LogNormal
		d := time.Duration(math.Round(float64(l.Median) * math.Exp(l.Sigma*rng.NormFloat64())))
		if l.Max > 0 {
			d = min(d, l.Max)
		}
		return min(d, MaxTime)
	}
	return t.Fixed
}

// Worker spends one consumer's processing times. It is not safe for
// concurrent use: a driver calls a consumer's ConsumeFunc serially.
type Worker struct {
	t   Time
	rng *rand.Rand
	// busyUntil is when the previous message's processing was to end,
	// woke when its sleep did.
	busyUntil, woke time.Time
}

// NewWorker returns the worker of a run's consumer number consumer, its
// draws seeded by t.Seed, or by seed when t.Seed is 0.
func (t Time) NewWorker(seed uint64, consumer int) *Worker {
	if t.Seed != 0 {
		seed = t.Seed
	}
	return &Worker{t: t, rng: rand.New(rand.NewPCG(seed, uint64(consumer)))}
}

// catchUpWithin is how soon after the previous message's processing the
// next one must start for the consumer to count as busy throughout: its
// next time then counts from when the previous one was to end, not from
// now, so a sleep that overran (a late wake-up on a busy machine) is made
// up, and a consumer that always has a next message receives exactly
// 1/mean messages per second. A consumer idle for longer starts afresh.
const catchUpWithin = time.Millisecond

// Process spends the next message's processing time, and returns when it
// is over.
func (w *Worker) Process() {
	now := time.Now()
	start := w.busyUntil
	if now.Sub(w.woke) > catchUpWithin {
		start = now
	}
	w.busyUntil = start.Add(w.t.draw(w.rng))
	time.Sleep(w.busyUntil.Sub(now))
	w.woke = time.Now()
}
