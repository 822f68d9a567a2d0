package runner

import (
	"fmt"
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestNewExecutor: each run gets the load shape that drives it.
func TestNewExecutor(t *testing.T) {
	producer := []*producerWorker{{}}
	cases := []struct {
		name string
		r    *run
		want executor
	}{
		// Producers through a warmup and a duration, at any pace.
		{"timed", &run{w: &workload.Workload{}, producers: producer}, timed{}},
		// A backlog test builds and drains.
		{"backlog", &run{w: &workload.Workload{ConsumerBacklogSizeGB: 1}, producers: producer}, backlog{}},
		// No producers: consumers read what the topics hold.
		{"consume only", &run{w: &workload.Workload{}}, consumeOnly{}},
		// A part is driven by its coordinator, with or without producers.
		{"part", &run{w: &workload.Workload{}, part: &Part{}}, partShare{}},
	}
	for _, tc := range cases {
		if got := newExecutor(tc.r); fmt.Sprintf("%T", got) != fmt.Sprintf("%T", tc.want) {
			t.Errorf("%s: %T, want %T", tc.name, got, tc.want)
		}
	}
}
