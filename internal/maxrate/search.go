package maxrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/brokerbench/brokerbench/internal/results"
)

// Trial makes one complete run at a total producer rate in msg/s; rate 0
// means unthrottled. It returns the run's results even with an error when
// anything was measured.
type Trial func(ctx context.Context, rate float64) (*results.Run, error)

// Config is a search's setup.
type Config struct {
	Trial Trial
	SLO   []Objective
	// MaxSteps bounds the fixed-rate steps after the probe (default 10), so
	// a search takes at most MaxSteps+Repeats*2+2 runs.
	MaxSteps int
	// Precision ends the bisection when the bracket [held, failed] is
	// narrower than this fraction of the failed rate (default 0.05).
	Precision float64
	// Repeats is how many times the found rate and the failed rate above it
	// are run again to show how repeatable the answer is (0 for none).
	Repeats int
	// Progress, if set, is called after every step.
	Progress func(results.RateStep)
}

// Outcome is a finished search: the curve, and the run at the highest held
// rate (nil if no step held).
type Outcome struct {
	Search results.MaxRateSearch
	Best   *results.Run
}

// aboveCeiling is the factor by which the search raises the rate past the
// probe's ceiling while steps keep holding there.
const aboveCeiling = 1.25

// Search finds the highest sustainable rate. An unmeasured unthrottled
// warm-up run comes first (a cold broker's first run is slow), then an
// unthrottled probe finds the ceiling C, what the producers pushed. The
// search ramps from C/16, doubling while steps hold and halving while they
// fail, until it has a held rate below a failed one. One slow probe must
// not cap the answer, so a step that holds at the ceiling is followed by
// steps 25% higher until one fails. The bracket is bisected down to
// Precision. A step holds when the run held its target rate (rate and send
// lag), met every objective, lost and failed no message, and ended with a
// backlog of at most one second of messages. Finally the found rate and
// the failed rate above it are each run Repeats times again, and the
// outcome states how often each held. Only held rates are ever reported.
// The search stops early when ctx ends; the outcome so far is returned
// with ctx's error.
func Search(ctx context.Context, cfg Config) (Outcome, error) {
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 10
	}
	if cfg.Precision <= 0 {
		cfg.Precision = 0.05
	}
	var out Outcome
	for _, o := range cfg.SLO {
		out.Search.SLO = append(out.Search.SLO, o.String())
	}
	warm, err := cfg.Trial(ctx, 0)
	if warm != nil {
		cfg.record(&out, results.StepWarmup, 0, warm, err)
	}
	if err != nil {
		return out, fmt.Errorf("unthrottled warm-up: %w", err)
	}
	probe, err := cfg.Trial(ctx, 0)
	if probe != nil {
		step := cfg.record(&out, results.StepProbe, 0, probe, err)
		out.Search.Ceiling = step.AchievedRate
	}
	if err != nil {
		return out, fmt.Errorf("unthrottled probe: %w", err)
	}
	// Steps are whole messages per second, the ceiling too: compared
	// unrounded, a step at the rounded ceiling sits just below it and the
	// search would try the same rate again and again.
	ceiling := math.Round(out.Search.Ceiling)
	if ceiling <= 0 {
		return out, errors.New("unthrottled probe published nothing")
	}
	failed, err := cfg.bracket(ctx, &out, ceiling)
	if err != nil || out.Best == nil {
		return out, err
	}
	return out, cfg.repeat(ctx, &out, failed)
}

// bracket runs the ramp and the bisection, and returns the lowest failed
// rate (+Inf if none failed).
func (cfg *Config) bracket(ctx context.Context, out *Outcome, ceiling float64) (float64, error) {
	held, failed := 0.0, math.Inf(1)
	rate := math.Round(ceiling / 16)
	for range cfg.MaxSteps {
		res, err := cfg.Trial(ctx, rate)
		if res == nil {
			return failed, err
		}
		step := cfg.record(out, results.StepSearch, rate, res, err)
		if err != nil {
			return failed, err
		}
		if step.Held {
			held = rate
			if rate > out.Search.Rate {
				out.Search.Rate, out.Best = rate, res
			}
		} else {
			failed = rate
		}
		switch {
		case math.IsInf(failed, 1) && rate >= ceiling:
			rate = aboveCeiling * rate // held at the ceiling: the probe was not the limit
		case math.IsInf(failed, 1) && 2*rate >= 0.99*ceiling:
			rate = ceiling // within 1%: try the ceiling itself
		case math.IsInf(failed, 1):
			rate = 2 * rate
		case held == 0:
			rate /= 2
		case (failed-held)/failed <= cfg.Precision:
			return failed, nil
		default:
			rate = (held + failed) / 2
		}
		rate = math.Round(rate)
		if rate < 1 {
			return failed, nil
		}
	}
	return failed, nil
}

// repeat runs the found rate, and the failed rate above it, Repeats times
// each, and records how often each held.
func (cfg *Config) repeat(ctx context.Context, out *Outcome, failed float64) error {
	if cfg.Repeats <= 0 {
		return nil
	}
	rep := &results.Repeatability{Rate: out.Search.Rate, Held: 1, Runs: 1}
	if !math.IsInf(failed, 1) {
		rep.Above, rep.AboveRuns = failed, 1
	}
	out.Search.Repeatability = rep
	for range cfg.Repeats {
		for _, r := range []struct {
			rate       float64
			held, runs *int
		}{{rep.Rate, &rep.Held, &rep.Runs}, {rep.Above, &rep.AboveHeld, &rep.AboveRuns}} {
			if r.rate == 0 {
				continue
			}
			res, err := cfg.Trial(ctx, r.rate)
			if res == nil {
				return err
			}
			step := cfg.record(out, results.StepRepeat, r.rate, res, err)
			if err != nil {
				return err
			}
			*r.runs++
			if step.Held {
				*r.held++
			}
		}
	}
	return nil
}

// record judges one run, appends it to the curve and reports it.
func (cfg *Config) record(out *Outcome, kind results.StepKind, rate float64, res *results.Run, runErr error) results.RateStep {
	m := res.Measured
	step := results.RateStep{
		RunID: res.ID, Kind: kind, TargetRate: rate, AchievedRate: m.PublishRate, ConsumeRate: m.ConsumeRate,
		PublishLatency: m.PublishLatency, EndToEndLatency: m.EndToEndLatency, SendLagP99: m.SendLag.P99,
	}
	for i := len(res.Intervals) - 1; i >= 0; i-- {
		if res.Intervals[i].Phase == results.Measure {
			step.Backlog = res.Intervals[i].Backlog
			break
		}
	}
	if rate > 0 {
		reasons := judge(res, rate, step.Backlog, cfg.SLO)
		if runErr != nil {
			reasons = append(reasons, runErr.Error())
		}
		step.Held = len(reasons) == 0
		step.Reason = strings.Join(reasons, "; ")
	}
	out.Search.Steps = append(out.Search.Steps, step)
	if cfg.Progress != nil {
		cfg.Progress(step)
	}
	return step
}

// judge lists the reasons a run at rate does not count as sustained.
func judge(res *results.Run, rate float64, backlog int64, slo []Objective) []string {
	var reasons []string
	if res.Partial {
		reasons = append(reasons, "partial run: "+res.PartialReason)
	}
	if t := res.Target; t == nil || !t.Held {
		why := "no target recorded"
		if t != nil {
			why = t.Reason
		}
		reasons = append(reasons, why)
	}
	for _, o := range slo {
		l := res.Measured.PublishLatency
		if o.Metric == "e2e" {
			l = res.Measured.EndToEndLatency
		}
		limit := float64(o.Limit) / 1e6
		if v := o.value(l); !(v < limit) {
			reasons = append(reasons, fmt.Sprintf("%s = %.3f ms, objective < %.3f ms", o, v, limit))
		}
	}
	c := res.Counts
	if c.Failed > 0 || c.Lost > 0 {
		reasons = append(reasons, fmt.Sprintf("%d failed, %d lost", c.Failed, c.Lost))
	}
	if w := res.Workload; w != nil && w.Consumers() > 0 && float64(backlog) > rate*float64(max(1, w.SubscriptionsPerTopic)) {
		reasons = append(reasons, fmt.Sprintf("backlog of %d messages at the end, more than one second's worth", backlog))
	}
	return reasons
}
