package output

import (
	"fmt"
	"io"

	"github.com/brokerbench/brokerbench/internal/results"
)

// Journal keeps the run's progress in a journal file at Path as it
// happens, so that a run killed outright leaves what it measured; it is
// removed once the run is stored.
type Journal struct {
	Path    string
	journal *results.Journal
}

var (
	_ Output        = (*Journal)(nil)
	_ TopicRecorder = (*Journal)(nil)
)

// Start creates the journal with the run as known at its start.
func (j *Journal) Start(head *results.Run) error {
	jr, err := results.CreateJournal(j.Path, head)
	if err != nil {
		return fmt.Errorf("%w (the journal goes beside the results)", err)
	}
	j.journal = jr
	return nil
}

// CreatingTopic records the topic.
func (j *Journal) CreatingTopic(name string) { j.journal.CreatingTopic(name) }

// DeletedTopic records the topic's deletion.
func (j *Journal) DeletedTopic(name string) { j.journal.DeletedTopic(name) }

// AddInterval records the interval.
func (j *Journal) AddInterval(iv results.Interval, h results.Histograms) { j.journal.Interval(iv, h) }

// Stop closes the journal, removing it if the run is stored.
func (j *Journal) Stop(_ *results.Run, stored bool) error { return j.journal.Close(stored) }

// File writes what Of makes of the run as JSON to Path, or to a fallback
// path if it cannot (never losing it), and says on W where it went.
type File struct {
	Base
	W    io.Writer
	Path string
	// Label names the file in what is said: "results", "OMB results".
	Label string
	// Of is what is written of the run; nil: the run itself, marked
	// PARTIAL in what is said when it is.
	Of func(*results.Run) any
}

var _ Storer = File{}

// ResultsFile writes the results JSON to path.
func ResultsFile(w io.Writer, path string) File { return File{W: w, Path: path, Label: "results"} }

// OMBFile writes the run as OpenMessaging Benchmark TestResult JSON to
// path.
func OMBFile(w io.Writer, path string) File {
	return File{W: w, Path: path, Label: "OMB results", Of: func(r *results.Run) any { return results.OMB(r) }}
}

// StoresRun marks File as a Storer.
func (File) StoresRun() {}

// Stop writes res, if any.
func (f File) Stop(res *results.Run, _ bool) error {
	if res == nil {
		return nil
	}
	var v any = res
	partial := ""
	if f.Of != nil {
		v = f.Of(res)
	} else if res.Partial {
		partial = " (PARTIAL)"
	}
	written, err := results.WriteOrFallback(f.Path, v)
	switch {
	case err == nil:
		fmt.Fprintf(f.W, "%s: %s%s\n", f.Label, written, partial)
	case written != "":
		fmt.Fprintf(f.W, "%s: could not write %s (%v); saved to %s%s instead\n", f.Label, f.Path, err, written, partial)
	}
	return err
}
