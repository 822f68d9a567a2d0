package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestSampleUntil: while a phase waits, its intervals end exactly on
// their boundaries, and it stops exactly when what it waits for happens:
// its channel is closed or its deadline passes; a condition is seen
// within donePoll.
func TestSampleUntil(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after is when the awaited event happens, from the collector's
		// origin; entered is when sampleUntil is called.
		after, entered time.Duration
		kind           stopReason
		// late is how long after the event sampleUntil may return.
		late time.Duration
	}{
		{"closed", 2503 * time.Millisecond, 3 * time.Millisecond, channelClosed, 0},
		{"deadline", 2505500 * time.Microsecond, 7 * time.Millisecond, timedOut, 0},
		{"condition", 2505500 * time.Microsecond, 7 * time.Millisecond, conditionMet, donePoll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &run{w: &workload.Workload{}, res: &results.Run{}, cfg: Config{Interval: time.Second}}
				c := &collector{r: r, cur: newLatencies(), agg: newLatencies(), warm: newLatencies()}
				c.origin = clock.Now()
				c.lastAt = c.origin
				at := time.Now().Add(tc.after)
				time.Sleep(tc.entered)
				var closed chan struct{}
				var done func() bool
				var deadline time.Time
				switch tc.kind {
				case channelClosed:
					closed = make(chan struct{})
					time.AfterFunc(time.Until(at), func() { close(closed) })
				case timedOut:
					done, deadline = func() bool { return false }, at
				case conditionMet:
					var met atomic.Bool
					time.AfterFunc(time.Until(at), func() { met.Store(true) })
					done = met.Load
				}
				if got := c.sampleUntil(context.Background(), results.Drain, closed, done, deadline); got != tc.kind {
					t.Fatalf("stopped for %d, want %d", got, tc.kind)
				}
				if d := time.Since(at); d < 0 || d > tc.late {
					t.Errorf("returned %s after the event, want within %s", d, tc.late)
				}
				var ends []float64
				for _, iv := range r.res.Intervals {
					ends = append(ends, iv.EndSeconds)
				}
				if len(ends) != 2 || ends[0] != 1 || ends[1] != 2 {
					t.Errorf("intervals ending at %v s: want two, ending at 1 s and 2 s", ends)
				}
			})
		})
	}
}
