package pacer

import (
	"testing"
	"time"
)

func TestConstantSchedule(t *testing.T) {
	cases := []struct {
		name string
		p    Constant
		i    uint64
		want time.Duration
	}{
		// The first send is due at the phase.
		{"first", Constant{PerSecond: 1000}, 0, 0},
		// 1000/s is one send per millisecond.
		{"thousandth", Constant{PerSecond: 1000}, 1000, time.Second},
		// Absolute schedule: far sends do not drift (no accumulated error).
		{"billionth", Constant{PerSecond: 3}, 3_000_000_000, 1_000_000_000 * time.Second},
		// Fractional intervals are rounded per send, not accumulated.
		{"third", Constant{PerSecond: 3}, 1, 333_333_333},
		// The phase shifts every send.
		{"phase", Constant{PerSecond: 10, Phase: 5 * time.Millisecond}, 2, 205 * time.Millisecond},
	}
	for _, tc := range cases {
		if got := tc.p.Due(tc.i); got != tc.want {
			t.Errorf("%s: Due(%d) = %v, want %v", tc.name, tc.i, got, tc.want)
		}
	}
}

func TestSplit(t *testing.T) {
	// Two producers sharing 1000/s each send 500/s, interleaved: producer 1
	// is shifted by half of its 2 ms interval.
	p0, p1 := Split(1000, 2, 0), Split(1000, 2, 1)
	if p0.(Constant).PerSecond != 500 || p1.(Constant).PerSecond != 500 {
		t.Fatalf("rates %v %v", p0, p1)
	}
	if p0.Due(1) != 2*time.Millisecond || p1.Due(0) != time.Millisecond || p1.Due(1) != 3*time.Millisecond {
		t.Errorf("schedules not interleaved: %v %v %v", p0.Due(1), p1.Due(0), p1.Due(1))
	}
	// Over one second the two schedules together hold exactly the total.
	n := 0
	for _, p := range []Pacer{p0, p1} {
		for i := uint64(0); p.Due(i) < time.Second; i++ {
			n++
		}
	}
	if n != 1000 {
		t.Errorf("%d sends due in the first second, want 1000", n)
	}
	if _, ok := Split(0, 4, 1).(Unlimited); !ok {
		t.Error("rate 0 is not unlimited")
	}
	if Split(0, 4, 1).Due(99) >= 0 {
		t.Error("unlimited schedule gave an intended time")
	}
}

func BenchmarkConstantDue(b *testing.B) {
	b.ReportAllocs()
	var p Pacer = Constant{PerSecond: 123456}
	var sink time.Duration
	for i := uint64(0); b.Loop(); i++ {
		sink += p.Due(i)
	}
	_ = sink
}
