// Package clock provides the single timestamp source brokerbench uses for
// every latency it measures.
//
// Timestamps are nanoseconds since the Unix epoch, but they advance with the
// process's monotonic clock: the wall clock is read once, when the package is
// initialised, and every later reading adds the monotonic time elapsed since.
// Differences between two readings in one process are therefore immune to
// wall-clock steps (NTP slews, manual changes), while readings from different
// processes on hosts with synchronised clocks remain comparable.
//
// Inside a testing/synctest bubble time.Now has no monotonic reading and
// returns the bubble's fake time; Now then returns that time, advancing
// exactly as the bubble's clock does, so code timed by Now can be tested
// there.
package clock

import "time"

var (
	base     = time.Now()
	baseWall = base.UnixNano()
)

// Now returns the current time in nanoseconds since the Unix epoch, advancing
// monotonically within this process. It is safe for concurrent use and does
// not allocate.
func Now() int64 {
	return baseWall + int64(time.Since(base))
}
