package pacer

import (
	"math"
	"testing"
	"time"
)

// TestProfileSchedules checks each profile's intended send times exactly:
// send i is due where the integral of the rate reaches i.
func TestProfileSchedules(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		p    Profile
		i    uint64
		want time.Duration
	}{
		// Ramp 0 -> 100/s over 10 s: the rate is 10t, the integral 5t².
		{"ramp first send at the start", NewRamp(0, 100, 10*time.Second), 0, 0},
		{"ramp 5 sends by 1 s", NewRamp(0, 100, 10*time.Second), 5, time.Second},
		{"ramp 20 sends by 2 s", NewRamp(0, 100, 10*time.Second), 20, 2 * time.Second},
		{"ramp 500 sends by its end", NewRamp(0, 100, 10*time.Second), 500, 10 * time.Second},
		// After the ramp the rate holds at 100/s.
		{"ramp holds its end rate", NewRamp(0, 100, 10*time.Second), 600, 11 * time.Second},
		// Ramp down 200 -> 100/s over 1 s: 150 sends in it; the integral
		// 200t - 50t² reaches 75 at t = 2 - sqrt(2.5).
		{"ramp down", NewRamp(200, 100, time.Second), 75, offset(2 - math.Sqrt(2.5))},
		{"ramp down holds", NewRamp(200, 100, time.Second), 160, 1100 * ms},
		// A flat ramp is a constant rate.
		{"flat ramp", NewRamp(50, 50, time.Second), 25, 500 * ms},
		// Steps: 10/s for 2 s (20 sends), then 100/s for 1 s, then 1000/s.
		{"steps first", NewSteps([]Step{{10, 2 * time.Second}, {100, time.Second}, {1000, 0}}), 19, 1900 * ms},
		{"steps second", NewSteps([]Step{{10, 2 * time.Second}, {100, time.Second}, {1000, 0}}), 20, 2 * time.Second},
		{"steps second mid", NewSteps([]Step{{10, 2 * time.Second}, {100, time.Second}, {1000, 0}}), 70, 2500 * ms},
		{"steps last holds", NewSteps([]Step{{10, 2 * time.Second}, {100, time.Second}, {1000, 0}}), 1120, 4 * time.Second},
		// A step of rate 0 sends nothing: the next send waits for the next step.
		{"steps pause", NewSteps([]Step{{10, time.Second}, {0, time.Second}, {10, 0}}), 10, 2 * time.Second},
		// Bursts: 1000/s for 1 s, nothing for 4 s, again.
		{"bursts in the first", NewBursts(1000, 0, time.Second, 4*time.Second), 999, 999 * ms},
		{"bursts second burst", NewBursts(1000, 0, time.Second, 4*time.Second), 1000, 5 * time.Second},
		{"bursts tenth burst", NewBursts(1000, 0, time.Second, 4*time.Second), 9500, 45500 * ms},
		// Bursts over a base: 100/s for 1 s, 10/s for 1 s (110 a period).
		{"bursts base", NewBursts(100, 10, time.Second, time.Second), 105, 1500 * ms},
		{"bursts base next", NewBursts(100, 10, time.Second, time.Second), 110 + 50, 2500 * ms},
		// A curve 0 s: 0/s, 10 s: 100/s, 10 s: 10/s, 20 s: 10/s: a ramp,
		// a step down, flat, then held.
		{"curve ramp", curve(), 20, 2 * time.Second},
		{"curve step", curve(), 510, 11 * time.Second},
		{"curve held", curve(), 700, 30 * time.Second},
		// Sine 100/s ± 50 over 10 s: whole periods of 1000 sends.
		{"sine start", Sine{100, 50, 10 * time.Second}, 0, 0},
		{"sine period", Sine{100, 50, 10 * time.Second}, 1000, 10 * time.Second},
		{"sine third period", Sine{100, 50, 10 * time.Second}, 3000, 30 * time.Second},
		// Sine 100/s ± 5π over 10 s: by a quarter period 250 + 25 sends
		// (the swing adds amplitude*period/(2π)), by half 500 + 50.
		{"sine quarter", Sine{100, 5 * math.Pi, 10 * time.Second}, 275, 2500 * ms},
		{"sine half", Sine{100, 5 * math.Pi, 10 * time.Second}, 550, 5 * time.Second},
		{"sine next half", Sine{100, 5 * math.Pi, 10 * time.Second}, 1550, 15 * time.Second},
		// Amplitude equal to the mean: the rate touches 0 at 7.5 s.
		{"sine to zero", Sine{100, 100, 10 * time.Second}, 2000, 20 * time.Second},
	}
	for _, tc := range cases {
		if got := tc.p.Due(tc.i); got != tc.want {
			t.Errorf("%s: Due(%d) = %v, want %v", tc.name, tc.i, got, tc.want)
		}
	}
}

func curve() Profile {
	return NewCurve([]Point{{0, 0}, {10, 100}, {10, 10}, {20, 10}})
}

// TestDueInvertsSends checks, for every profile, that send i is due at the
// first time the integral reaches i: Sends(Due(i)) is i within rounding to
// the nanosecond, and due times never decrease.
func TestDueInvertsSends(t *testing.T) {
	profiles := map[string]Profile{
		"constant":  Constant{PerSecond: 333},
		"ramp":      NewRamp(10, 1000, 7*time.Second),
		"ramp down": NewRamp(1000, 1, 3*time.Second),
		"steps":     NewSteps([]Step{{5, time.Second}, {0, time.Second}, {300, 2 * time.Second}, {50, 0}}),
		"bursts":    NewBursts(700, 3, 300*time.Millisecond, 1700*time.Millisecond),
		"curve":     curve(),
		"sine":      Sine{400, 300, 3 * time.Second},
		"sine full": Sine{400, 400, 3 * time.Second},
	}
	for name, p := range profiles {
		prev := time.Duration(-1)
		for i := uint64(0); i < 20_000; i += 7 {
			due := p.Due(i)
			if due < prev {
				t.Fatalf("%s: Due(%d) = %v before Due of an earlier send %v", name, i, due, prev)
			}
			prev = due
			// Within a nanosecond either side the integral is i, at the
			// highest rate here (1000/s) to within 1e-6 sends.
			if lo, hi := p.Sends(due-1), p.Sends(due+1); lo > float64(i)+1e-6 || hi < float64(i)-1e-6 {
				t.Fatalf("%s: Due(%d) = %v, but Sends is %v..%v around it", name, i, due, lo, hi)
			}
		}
	}
}

// TestShareInterleaves: producers sharing a profile send its schedule
// between them, send j by producer j mod n.
func TestShareInterleaves(t *testing.T) {
	p := NewRamp(0, 1000, 5*time.Second)
	for j := uint64(0); j < 300; j++ {
		if got, want := Share(p, 3, int(j%3)).Due(j/3), p.Due(j); got != want {
			t.Fatalf("send %d: producer %d's Due %v, want the profile's %v", j, j%3, got, want)
		}
	}
	if _, ok := Share(nil, 3, 0).(Unlimited); !ok {
		t.Error("no profile is not unlimited")
	}
}

// TestTargetRate is the mean rate the profile asks for over a stretch.
func TestTargetRate(t *testing.T) {
	cases := []struct {
		name     string
		p        Profile
		from, to time.Duration
		want     float64
	}{
		// A constant rate is its rate over any stretch.
		{"constant", Constant{PerSecond: 250}, 3 * time.Second, 4 * time.Second, 250},
		// Ramp 0 -> 100 over 10 s: 10t, so 15/s on average in [1 s, 2 s).
		{"ramp", NewRamp(0, 100, 10*time.Second), time.Second, 2 * time.Second, 15},
		// Bursts 1000/s 1 s in 5: 200/s over a period.
		{"bursts", NewBursts(1000, 0, time.Second, 4*time.Second), 5 * time.Second, 10 * time.Second, 200},
		// An empty stretch asks for nothing.
		{"empty", Constant{PerSecond: 250}, time.Second, time.Second, 0},
	}
	for _, tc := range cases {
		if got := TargetRate(tc.p, tc.from, tc.to); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: TargetRate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func BenchmarkRampDue(b *testing.B) {
	b.ReportAllocs()
	p := Share(NewRamp(100, 100_000, time.Minute), 4, 1)
	var sink time.Duration
	for i := uint64(0); b.Loop(); i++ {
		sink += p.Due(i)
	}
	_ = sink
}

func BenchmarkSineDue(b *testing.B) {
	b.ReportAllocs()
	p := Sine{Mean: 10_000, Amplitude: 5000, Period: time.Minute}
	var sink time.Duration
	for i := uint64(0); b.Loop(); i++ {
		sink += p.Due(i)
	}
	_ = sink
}
