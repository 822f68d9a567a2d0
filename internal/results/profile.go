package results

import (
	"fmt"
	"math"
	"strings"
)

// ProfileShortfall is how far below its target rate an interval's
// achieved publish rate may fall, as a share of the target, before the
// interval counts as falling short of a rate profile. One interval's
// acknowledgements trail its sends by a round trip, which a rising
// profile turns into a shortfall of a few per cent of its own.
const ProfileShortfall = 0.05

// ProfileFit is how closely a run followed its rate profile, interval by
// interval, through the measurement.
type ProfileFit struct {
	// Intervals is how many measured intervals had a target.
	Intervals int
	// MaxDeviation is the largest deviation of an interval's achieved
	// publish rate from its target, as a signed share of the target
	// (achieved/target - 1); AtSeconds is that interval's end.
	MaxDeviation float64
	AtSeconds    float64
	// Short are the ends of the intervals that fell more than
	// ProfileShortfall below their target.
	Short []float64
}

// FollowedProfile returns how closely r followed its workload's rate
// profile; nil for a run without one, or without a measured interval
// that had a target.
func FollowedProfile(r *Run) *ProfileFit {
	if r.Workload == nil || r.Workload.RateProfile == nil {
		return nil
	}
	fit := &ProfileFit{}
	for _, iv := range r.Intervals {
		if iv.Phase != Measure || iv.TargetRate <= 0 {
			continue
		}
		fit.Intervals++
		dev := iv.PublishRate/iv.TargetRate - 1
		if math.Abs(dev) > math.Abs(fit.MaxDeviation) || fit.Intervals == 1 {
			fit.MaxDeviation, fit.AtSeconds = dev, iv.EndSeconds
		}
		if dev < -ProfileShortfall {
			fit.Short = append(fit.Short, iv.EndSeconds)
		}
	}
	if fit.Intervals == 0 {
		return nil
	}
	return fit
}

// Describe says in a line how closely the profile was followed.
func (f *ProfileFit) Describe() string {
	largest := fmt.Sprintf("largest deviation %+.1f%% in the interval ending at %.1f s", 100*f.MaxDeviation, f.AtSeconds)
	if len(f.Short) == 0 {
		return fmt.Sprintf("rate profile followed: no interval of %d fell more than %.0f%% short of its target (%s)", f.Intervals, 100*ProfileShortfall, largest)
	}
	at := make([]string, len(f.Short))
	for i, s := range f.Short {
		at[i] = fmt.Sprintf("%.1f", s)
	}
	const listed = 10
	more := ""
	if len(at) > listed {
		at, more = at[:listed], fmt.Sprintf(" and %d more", len(f.Short)-listed)
	}
	return fmt.Sprintf("RATE PROFILE NOT FOLLOWED: %d of %d intervals fell more than %.0f%% short of their target (ending at %s s%s); %s",
		len(f.Short), f.Intervals, 100*ProfileShortfall, strings.Join(at, ", "), more, largest)
}
