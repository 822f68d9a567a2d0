package engine

import (
	"fmt"
	goio "io"
	"path/filepath"

	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/study"
)

// recordHistory adds runs whose results are written to the history, and
// says on w what it could not: a run is never failed by its history.
func recordHistory(w goio.Writer, rc history.Recording, runs ...history.Stored) {
	if _, err := rc.Add(runs...); err != nil {
		fmt.Fprintf(w, "warning: not recorded in the history: %v\n", err)
	}
}

// recordStudy adds the study's finished runs to the history; runs it
// holds already (kept from an earlier session of the study) are skipped.
func recordStudy(w goio.Writer, rc history.Recording, dir string, idx *study.Index) {
	if rc.Path == "" {
		return
	}
	var runs []history.Stored
	for _, e := range idx.Runs {
		if e.Status != study.Done || e.File == "" {
			continue
		}
		path := filepath.Join(dir, e.File)
		res, err := results.Read(path)
		if err != nil {
			fmt.Fprintf(w, "warning: not recorded in the history: %v\n", err)
			continue
		}
		runs = append(runs, history.Stored{Run: res, Path: path})
	}
	recordHistory(w, rc, runs...)
}
