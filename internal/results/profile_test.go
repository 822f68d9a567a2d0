package results

import (
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

func TestFollowedProfile(t *testing.T) {
	profiled := &workload.Workload{RateProfile: &workload.RateProfile{Ramp: &workload.Ramp{From: 100, To: 200}}}
	iv := func(phase Phase, end, target, achieved float64) Interval {
		return Interval{Phase: phase, EndSeconds: end, TargetRate: target, Traffic: Traffic{PublishRate: achieved}}
	}
	for _, c := range []struct {
		name string
		run  *Run
		want string // "" for no fit
	}{
		// A constant rate is judged by Target alone.
		{"no profile", &Run{Workload: &workload.Workload{ProducerRate: 100}, Intervals: []Interval{iv(Measure, 1, 100, 50)}}, ""},
		// Warmup and drain are not the measurement.
		{"nothing measured", &Run{Workload: profiled, Intervals: []Interval{iv(Warmup, 1, 100, 50), iv(Drain, 2, 0, 10)}}, ""},
		// 4% below and 3% above are within the 5%.
		{"followed", &Run{Workload: profiled, Intervals: []Interval{iv(Warmup, 1, 100, 10), iv(Measure, 2, 100, 96), iv(Measure, 3, 200, 206)}},
			"rate profile followed: no interval of 2 fell more than 5% short of its target (largest deviation -4.0% in the interval ending at 2.0 s)"},
		// Above the target is a deviation, never a shortfall.
		{"ahead", &Run{Workload: profiled, Intervals: []Interval{iv(Measure, 1, 100, 150), iv(Measure, 2, 100, 90)}},
			"RATE PROFILE NOT FOLLOWED: 1 of 2 intervals fell more than 5% short of their target (ending at 2.0 s); largest deviation +50.0% in the interval ending at 1.0 s"},
	} {
		f := FollowedProfile(c.run)
		switch {
		case c.want == "" && f != nil:
			t.Errorf("%s: %+v, want none", c.name, f)
		case c.want != "" && (f == nil || f.Describe() != c.want):
			t.Errorf("%s: %+v, want %q", c.name, f, c.want)
		}
	}
	var ivs []Interval
	for i := range 12 {
		ivs = append(ivs, iv(Measure, float64(i+1), 100, 10))
	}
	if d := FollowedProfile(&Run{Workload: profiled, Intervals: ivs}).Describe(); !strings.Contains(d, "(ending at 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0 s and 2 more)") {
		t.Errorf("twelve short intervals: %q", d)
	}
}
