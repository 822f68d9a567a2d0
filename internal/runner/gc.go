package runner

import (
	"os"
	"runtime/debug"
	"sync"
)

// runGCPercent is the garbage collector's target (GOGC) while runs are
// under way: the heap may grow to three times what is live between
// collections instead of twice. A consumer allocates every fetched
// response afresh, and each collection marks the whole live heap, whose
// bulk in this binary is the clients' and the command line's tables, not
// the run's messages. Kafka consumers, 100 B and 1 KB, 2,000,000-4,000,000
// messages from a local broker: 0.88-1.66 CPU-seconds at 200 against
// 1.05-1.87 at the default of 100 (medians of 3), for 20-35 MB more
// resident memory; the bare franz-go loop took 0.97-1.58.
const runGCPercent = 200

// gcTarget counts the runs under way in this process, which share one
// collector.
var gcTarget struct {
	mu    sync.Mutex
	runs  int
	saved int // the target before the first of them
}

// raiseGCTarget sets the collector's target to runGCPercent, if it is
// lower and the user set no GOGC of their own, until the returned
// function has been called by every run that raised it.
func raiseGCTarget() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	gcTarget.mu.Lock()
	defer gcTarget.mu.Unlock()
	if gcTarget.runs == 0 {
		gcTarget.saved = debug.SetGCPercent(runGCPercent)
		if gcTarget.saved < 0 || gcTarget.saved > runGCPercent {
			debug.SetGCPercent(gcTarget.saved)
		}
	}
	gcTarget.runs++
	return func() {
		gcTarget.mu.Lock()
		defer gcTarget.mu.Unlock()
		if gcTarget.runs--; gcTarget.runs == 0 {
			debug.SetGCPercent(gcTarget.saved)
		}
	}
}
