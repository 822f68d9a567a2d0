package maxrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Trial makes one complete run at a total producer rate in msg/s; rate 0
// means unthrottled. It returns the run's results even with an error when
// anything was measured.
type Trial func(ctx context.Context, rate float64) (*results.Run, error)

// Config is a search's setup.
type Config struct {
	Trial Trial
	// Ramp, if set, finds the knee with one ramp run instead of
	// doubling steps, and confirms it with Trial's constant runs (see
	// Search).
	Ramp RampTrial
	SLO  []Objective
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
	// Sample, if set, returns the machine's resource use since its
	// previous call (see sysmetrics.Sampler.Sample): between steps, the
	// search uses it to wait for a machine that other processes disturbed
	// to be quiet again.
	Sample func() *results.System
	// Retries is how many times a failed step that other processes
	// disturbed is made again, each after waiting up to QuietWait for
	// the machine to be quiet (default 2; negative for none). A step
	// still disturbed after them ends the search as not measurable.
	Retries   int
	QuietWait time.Duration
	// Log, if set, receives what the search waits for.
	Log func(format string, args ...any)
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
// With a Ramp, one run ramps from C/16 to 1.25 C instead of the doubling
// and bisection, and its knee (see findKnee) is confirmed by constant
// runs, each 2*Precision lower than the last while they fail.
// The search stops early when ctx ends; the outcome so far is returned
// with ctx's error.
func Search(ctx context.Context, cfg Config) (Outcome, error) {
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 10
	}
	if cfg.Precision <= 0 {
		cfg.Precision = 0.05
	}
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	if cfg.QuietWait <= 0 {
		cfg.QuietWait = time.Minute
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
	search := cfg.bracket
	if cfg.Ramp != nil {
		search = cfg.rampSearch
	}
	failed, err := search(ctx, &out, ceiling)
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
		res, step, err := cfg.step(ctx, out, results.StepSearch, rate)
		if res == nil || err != nil || out.Search.NotMeasurable != "" {
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
			res, step, err := cfg.step(ctx, out, results.StepRepeat, r.rate)
			if res == nil || err != nil || out.Search.NotMeasurable != "" {
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

// step makes one fixed-rate step at rate. A step that failed on a machine
// other processes disturbed is not the broker's failure: it is made again,
// up to Retries times, each once the machine is quiet; if it cannot be, the
// search is not measurable (out.Search.NotMeasurable) and ends. It returns
// the last run (nil if none), its step, and the run's error.
func (cfg *Config) step(ctx context.Context, out *Outcome, kind results.StepKind, rate float64) (*results.Run, results.RateStep, error) {
	for attempt := 0; ; attempt++ {
		res, err := cfg.Trial(ctx, rate)
		if res == nil {
			return nil, results.RateStep{}, err
		}
		step := cfg.record(out, kind, rate, res, err)
		if err != nil || step.Held || !step.Disturbed {
			return res, step, err
		}
		others, _ := results.Disturbance(res.Measured.System)
		if attempt >= max(0, cfg.Retries) {
			out.Search.NotMeasurable = fmt.Sprintf("the step at %.0f msg/s failed on a machine disturbed by other processes %d times (they used %.1f cores the last time); the broker's rate cannot be told from this machine's: rerun when it is quiet", rate, attempt+1, others)
			return res, step, nil
		}
		if cfg.Sample != nil {
			quiet, last := WaitQuiet(ctx, cfg.Sample, cfg.QuietWait, cfg.Log)
			if ctx.Err() != nil {
				return res, step, ctx.Err()
			}
			if !quiet {
				cores, _ := results.Disturbance(last)
				out.Search.NotMeasurable = fmt.Sprintf("the step at %.0f msg/s failed on a machine disturbed by other processes, and after %s they still used %.1f cores: the broker's rate cannot be told from this machine's; rerun when it is quiet", rate, cfg.QuietWait, cores)
				return res, step, nil
			}
		}
	}
}

// quietFor is how long the machine must stay quiet before a disturbed
// step is made again.
const quietFor = 3 * time.Second

// WaitQuiet samples the machine every second (sample returns its use
// since the previous call) until other processes have left it undisturbed
// (see results.Disturbance) for quietFor, or until bound passes or ctx
// ends. It reports whether the machine became quiet, and the last sample.
// log, if set, hears what it waits for, every 10 s.
func WaitQuiet(ctx context.Context, sample func() *results.System, bound time.Duration, log func(string, ...any)) (bool, *results.System) {
	deadline := time.Now().Add(bound)
	sample() // start a fresh stretch
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last *results.System
	quietSince, lastLog := time.Time{}, time.Now()
	for {
		select {
		case <-ctx.Done():
			return false, last
		case <-tick.C:
		}
		last = sample()
		cores, disturbed := results.Disturbance(last)
		now := time.Now()
		switch {
		case disturbed:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = now
		}
		if !quietSince.IsZero() && now.Sub(quietSince) >= quietFor {
			return true, last
		}
		if !now.Before(deadline) {
			return false, last
		}
		if log != nil && now.Sub(lastLog) >= 10*time.Second {
			log("max-rate search: waiting for the machine to be quiet: other processes use %.1f cores (up to %s more)", cores, deadline.Sub(now).Round(time.Second))
			lastLog = now
		}
	}
}

// record judges one run, appends it to the curve and reports it.
func (cfg *Config) record(out *Outcome, kind results.StepKind, rate float64, res *results.Run, runErr error) results.RateStep {
	m := res.Measured
	step := results.RateStep{
		RunID: res.ID, Kind: kind, TargetRate: rate, AchievedRate: m.PublishRate, ConsumeRate: m.ConsumeRate,
		PublishLatency: m.PublishLatency, EndToEndLatency: m.EndToEndLatency, SendLagP99: m.SendLag.P99,
	}
	_, step.Disturbed = results.Disturbance(m.System)
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
		if !step.Held && step.Disturbed {
			reasons = append(reasons, "on a machine disturbed by other processes: "+results.DisturbanceText(m.System))
		}
		step.Reason = strings.Join(reasons, "; ")
	}
	out.Search.Steps = append(out.Search.Steps, step)
	if cfg.Progress != nil {
		cfg.Progress(step)
	}
	return step
}

// missed lists the objectives of slo that publish latency pub and
// end-to-end latency e2e missed.
func missed(slo []Objective, pub, e2e metrics.Latency) []string {
	var reasons []string
	for _, o := range slo {
		l := pub
		if o.Metric == "e2e" {
			l = e2e
		}
		limit := float64(o.Limit) / 1e6
		if v := o.value(l); !(v < limit) {
			reasons = append(reasons, fmt.Sprintf("%s = %.3f ms, objective < %.3f ms", o, v, limit))
		}
	}
	return reasons
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
	reasons = append(reasons, missed(slo, res.Measured.PublishLatency, res.Measured.EndToEndLatency)...)
	c := res.Counts
	switch {
	case c.UnconfirmedLoss > 0:
		reasons = append(reasons, fmt.Sprintf("%d failed, %d lost, %d an unconfirmed loss", c.Failed, c.Lost, c.UnconfirmedLoss))
	case c.Failed > 0 || c.Lost > 0:
		reasons = append(reasons, fmt.Sprintf("%d failed, %d lost", c.Failed, c.Lost))
	}
	if w := res.Workload; w != nil && w.Consumers() > 0 && float64(backlog) > rate*float64(max(1, w.SubscriptionsPerTopic)) {
		reasons = append(reasons, fmt.Sprintf("backlog of %d messages at the end, more than one second's worth", backlog))
	}
	return reasons
}
