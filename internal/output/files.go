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

// ResultsFile writes the results JSON to Path, or to a fallback path if
// it cannot (never losing them), and says on W where they went.
type ResultsFile struct {
	Base
	W    io.Writer
	Path string
}

var _ Storer = ResultsFile{}

// StoresRun marks ResultsFile as a Storer.
func (ResultsFile) StoresRun() {}

// Stop writes res, if any.
func (f ResultsFile) Stop(res *results.Run, _ bool) error {
	if res == nil {
		return nil
	}
	partial := ""
	if res.Partial {
		partial = " (PARTIAL)"
	}
	written, err := results.WriteOrFallback(f.Path, res)
	switch {
	case err == nil:
		fmt.Fprintf(f.W, "results: %s%s\n", written, partial)
	case written != "":
		fmt.Fprintf(f.W, "results: could not write %s (%v); saved to %s%s instead\n", f.Path, err, written, partial)
	}
	return err
}

// OMBFile writes the run as OpenMessaging Benchmark TestResult JSON to
// Path, or to a fallback path if it cannot, and says on W where it went.
type OMBFile struct {
	Base
	W    io.Writer
	Path string
}

var _ Storer = OMBFile{}

// StoresRun marks OMBFile as a Storer.
func (OMBFile) StoresRun() {}

// Stop writes res, if any.
func (f OMBFile) Stop(res *results.Run, _ bool) error {
	if res == nil {
		return nil
	}
	written, err := results.WriteOrFallback(f.Path, results.OMB(res))
	switch {
	case err == nil:
		fmt.Fprintf(f.W, "OMB results: %s\n", written)
	case written != "":
		fmt.Fprintf(f.W, "OMB results: could not write %s (%v); saved to %s instead\n", f.Path, err, written)
	}
	return err
}
