package engine

import (
	"fmt"
	goio "io"

	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/results"
)

// recordHistory adds a run whose results are written to the history, and
// says on w what it could not: a run is never failed by its history.
func recordHistory(w goio.Writer, rc history.Recording, run history.Stored) {
	if _, err := rc.Add(run); err != nil {
		fmt.Fprintf(w, "warning: not recorded in the history: %v\n", err)
	}
}

// studyRecorder records each complete run of a study once its results are
// written. A partial run is not: the study makes it again when resumed.
func studyRecorder(w goio.Writer, rc history.Recording) func(*results.Run, string) {
	return func(res *results.Run, path string) {
		if res.Partial {
			return
		}
		recordHistory(w, rc, history.Stored{Run: res, Path: path})
	}
}
