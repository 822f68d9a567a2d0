package clock

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestNowFollowsFakeTime: inside a synctest bubble Now advances with the
// bubble's fake time, exactly, so that code timed by Now (every latency
// the runner records) can be tested under synctest.
func TestNowFollowsFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := Now()
		time.Sleep(1234 * time.Millisecond)
		if got := time.Duration(Now() - before); got != 1234*time.Millisecond {
			t.Errorf("Now advanced %s over a 1.234s sleep", got)
		}
		if got, want := Now(), time.Now().UnixNano(); got != want {
			t.Errorf("Now = %d, the bubble's time is %d", got, want)
		}
	})
}

// TestNowIsMonotonic: outside a bubble, readings never go back.
func TestNowIsMonotonic(t *testing.T) {
	prev := Now()
	for range 10000 {
		n := Now()
		if n < prev {
			t.Fatalf("Now went back from %d to %d", prev, n)
		}
		prev = n
	}
}
