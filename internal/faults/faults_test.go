package faults

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

type fakeFault struct {
	name  string
	err   error
	calls atomic.Int32
	got   []string
}

func (f *fakeFault) String() string { return f.name }

func (f *fakeFault) Apply(_ context.Context, topics []string) (string, error) {
	f.calls.Add(1)
	f.got = topics
	return "node 1", f.err
}

// TestScheduleFiresInOrderAndStops: faults fire at their times from the
// start, in time order, with the run's topics; a failure is recorded with
// its error; faults not yet due when Stop is called never fire.
func TestScheduleFiresInOrderAndStops(t *testing.T) {
	// In a bubble, faults fire at their times exactly, however busy the
	// machine.
	synctest.Test(t, func(t *testing.T) {
		early, failing, late := &fakeFault{name: "kill 1"}, &fakeFault{name: "pause 2", err: errors.New("no such node")}, &fakeFault{name: "kill 3"}
		origin := clock.Now()
		start := origin + int64(20*time.Millisecond)
		s := Start(context.Background(), []Scheduled{{At: 200 * time.Millisecond, Fault: failing}, {At: 50 * time.Millisecond, Fault: early}, {At: time.Hour, Fault: late}},
			[]string{"t0"}, origin, start)
		time.Sleep(400 * time.Millisecond)
		evs := s.Stop()
		if len(evs) != 2 || evs[0].Action != "kill 1" || evs[1].Action != "pause 2" || evs[1].Error != "no such node" || evs[0].Target != "node 1" {
			t.Fatalf("events %+v", evs)
		}
		if evs[0].AtSeconds != 0.07 || evs[1].AtSeconds != 0.22 {
			t.Errorf("event times %.3f and %.3f s, want 0.07 and 0.22 from the origin", evs[0].AtSeconds, evs[1].AtSeconds)
		}
		if late.calls.Load() != 0 || early.got[0] != "t0" {
			t.Errorf("the fault due in an hour fired (%d), or topics not passed (%v)", late.calls.Load(), early.got)
		}
	})
}

func interval(start float64, rate float64, maxMs float64) results.Interval {
	iv := results.Interval{StartSeconds: start, EndSeconds: start + 1, Phase: results.Measure}
	iv.PublishRate = rate
	iv.PublishLatency = metrics.Latency{Max: maxMs}
	return iv
}

func TestRecover(t *testing.T) {
	ivs := []results.Interval{
		{StartSeconds: 0, EndSeconds: 1, Phase: results.Warmup, Traffic: results.Traffic{PublishRate: 1}},
		interval(1, 900, 5), interval(2, 1000, 5), interval(3, 1100, 5),
		interval(4, 200, 3000), interval(5, 0, 0), interval(6, 850, 9000), interval(7, 950, 10),
	}
	ev := results.FaultEvent{AtSeconds: 4.2}
	Recover(&ev, ivs, 4.2)
	r := ev.Recovery
	if r == nil || r.RateBefore != 1000 || r.LowestRate != 0 || r.RecoverySeconds == nil || *r.RecoverySeconds < 3.79 || *r.RecoverySeconds > 3.81 || r.MaxPublishLatencyMs != 9000 {
		t.Fatalf("recovery %+v (seconds %v): want rate 1000 before, 0 lowest, back at 8.0 s (3.8 s after), max 9000 ms", r, r.RecoverySeconds)
	}
	never := results.FaultEvent{AtSeconds: 4.2}
	Recover(&never, ivs[:7], 4.2)
	if never.Recovery == nil || never.Recovery.RecoverySeconds != nil {
		t.Errorf("a rate that never came back: %+v", never.Recovery)
	}
	// A later fault (the undo at 6.5 s) is measured against the rate
	// before the first one, not against the disturbed intervals before it.
	undo := results.FaultEvent{AtSeconds: 6.5}
	Recover(&undo, ivs, 4.2)
	if u := undo.Recovery; u == nil || u.RateBefore != 1000 || u.RecoverySeconds == nil || *u.RecoverySeconds < 1.49 || *u.RecoverySeconds > 1.51 {
		t.Errorf("later fault: %+v, want the rate before the first fault and back at 8.0 s", undo.Recovery)
	}
	first := results.FaultEvent{AtSeconds: 0.5}
	if Recover(&first, ivs, 0.5); first.Recovery != nil {
		t.Errorf("a fault before any measured interval has no rate before: %+v", first.Recovery)
	}
}
