package maxrate

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/brokerbench/brokerbench/internal/results"
)

// RampTrial makes one complete run whose total producer rate rises
// linearly from `from` to `to` msg/s over its warmup and measurement. It
// returns the run's results even with an error when anything was
// measured.
type RampTrial func(ctx context.Context, from, to float64) (*results.Run, error)

// kneeShortfall is how far below its target an interval's achieved
// publish rate may fall in a ramp before the interval is past the knee:
// a ramp's acknowledgements trail its rising target by a round trip.
const kneeShortfall = 0.02

// rampSearch finds the knee with one ramp run from ceiling/16 to
// aboveCeiling times the ceiling, then confirms it with constant runs:
// at the knee's rate, and while they fail, each 2*Precision lower, up to
// MaxSteps runs. A ramp with no measured interval before its knee falls
// back to bracket's steps. It returns the lowest failed rate (+Inf if
// none failed).
func (cfg *Config) rampSearch(ctx context.Context, out *Outcome, ceiling float64) (float64, error) {
	from, to := math.Round(ceiling/16), math.Round(aboveCeiling*ceiling)
	res, err := cfg.Ramp(ctx, from, to)
	if res == nil {
		return math.Inf(1), err
	}
	k := findKnee(res, cfg.SLO)
	cfg.recordRamp(out, res, k, err)
	if err != nil {
		return math.Inf(1), err
	}
	if k.rate <= 0 {
		if cfg.Log != nil {
			cfg.Log("max-rate search: the ramp was past its knee from its first measured interval; searching by steps")
		}
		return cfg.bracket(ctx, out, ceiling)
	}
	failed := k.failedAt
	rate := math.Round(k.rate)
	for range cfg.MaxSteps {
		res, step, err := cfg.step(ctx, out, results.StepSearch, rate)
		if res == nil || err != nil || out.Search.NotMeasurable != "" {
			return failed, err
		}
		if step.Held {
			out.Search.Rate, out.Best = rate, res
			return failed, nil
		}
		failed = rate
		if rate = math.Round(rate * (1 - 2*cfg.Precision)); rate < 1 {
			break
		}
	}
	return failed, nil
}

// knee is where a ramp stopped being sustained.
type knee struct {
	// rate is the target of the last measured interval before the knee
	// (0: none); failedAt the target of the first interval past it (+Inf:
	// the ramp never got there), atSeconds its end, and why what went
	// wrong there.
	rate, failedAt, atSeconds float64
	why                       string
}

// findKnee returns the knee of ramp run res: the first measured interval
// that, with the one after it (a single noisy interval is not a knee),
// fell short of its target, sent late, missed an objective of slo or
// ended with more than a second's backlog.
func findKnee(res *results.Run, slo []Objective) knee {
	var ivs []results.Interval
	for _, iv := range res.Intervals {
		if iv.Phase == results.Measure && iv.TargetRate > 0 {
			ivs = append(ivs, iv)
		}
	}
	k := knee{failedAt: math.Inf(1)}
	lagLimit := 0.0
	if t := res.Target; t != nil {
		lagLimit = t.SendLagLimitMs
	}
	subs := 0
	if w := res.Workload; w != nil && w.Consumers() > 0 {
		subs = max(1, w.SubscriptionsPerTopic)
	}
	for i, iv := range ivs {
		why := pastKnee(iv, lagLimit, subs, slo)
		if why == "" || (i+1 < len(ivs) && pastKnee(ivs[i+1], lagLimit, subs, slo) == "") {
			k.rate = iv.TargetRate
			continue
		}
		k.failedAt, k.atSeconds, k.why = iv.TargetRate, iv.EndSeconds, why
		if i == 0 {
			k.rate = 0
		} else {
			k.rate = ivs[i-1].TargetRate
		}
		return k
	}
	return k
}

// pastKnee says why interval iv of a ramp was not sustained; "" if it
// was. lagLimit is the send lag p99 limit in ms (0: none), subs the
// subscriptions whose backlog counts (0: no consumers).
func pastKnee(iv results.Interval, lagLimit float64, subs int, slo []Objective) string {
	var reasons []string
	if iv.PublishRate < (1-kneeShortfall)*iv.TargetRate {
		reasons = append(reasons, fmt.Sprintf("achieved %.0f of %.0f msg/s", iv.PublishRate, iv.TargetRate))
	}
	if lagLimit > 0 && iv.SendLag.P99 > lagLimit {
		reasons = append(reasons, fmt.Sprintf("send lag p99 %.3f ms above %.3f ms", iv.SendLag.P99, lagLimit))
	}
	reasons = append(reasons, missed(slo, iv.PublishLatency, iv.EndToEndLatency)...)
	if subs > 0 && float64(iv.Backlog) > iv.TargetRate*float64(subs) {
		reasons = append(reasons, fmt.Sprintf("backlog of %d messages, more than one second's worth", iv.Backlog))
	}
	return strings.Join(reasons, "; ")
}

// recordRamp appends the ramp run to the curve as a step whose target is
// the knee's rate, and reports it.
func (cfg *Config) recordRamp(out *Outcome, res *results.Run, k knee, runErr error) {
	m := res.Measured
	step := results.RateStep{
		RunID: res.ID, Kind: results.StepRamp, TargetRate: k.rate, AchievedRate: m.PublishRate, ConsumeRate: m.ConsumeRate,
		PublishLatency: m.PublishLatency, EndToEndLatency: m.EndToEndLatency, SendLagP99: m.SendLag.P99,
	}
	_, step.Disturbed = results.Disturbance(m.System)
	switch {
	case runErr != nil:
		step.Reason = runErr.Error()
	case math.IsInf(k.failedAt, 1):
		step.Reason = "no knee: sustained to its end"
	default:
		step.Reason = fmt.Sprintf("knee in the interval ending at %.1f s (target %.0f msg/s): %s", k.atSeconds, k.failedAt, k.why)
	}
	out.Search.Steps = append(out.Search.Steps, step)
	if cfg.Progress != nil {
		cfg.Progress(step)
	}
}
