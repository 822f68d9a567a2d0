// Package output hands what a run produces to where it goes: progress
// lines, live metrics, the journal a killed run leaves, the results JSON,
// OMB JSON and the summary. Every destination is an Output; a Manager
// fans a run out to its outputs, as the runner's journal, so that the
// engine adds outputs without chaining them by hand.
package output

import (
	"errors"
	"fmt"
	"io"

	"github.com/brokerbench/brokerbench/internal/results"
)

// Output is one destination of a run. Its methods are called from one
// goroutine at a time: Start once, AddInterval for every interval, then
// Stop once (also when the run measured nothing, or a later output's
// Start failed).
type Output interface {
	// Start is called when the run starts, with the run as known then:
	// its id, workload, driver and start time. An error stops the run
	// before it reaches the broker.
	Start(head *results.Run) error
	// AddInterval is called with every interval as it ends, and its
	// encoded histograms; it must not block for long.
	AddInterval(iv results.Interval, h results.Histograms)
	// Stop is called once the run ended with res (nil: nothing was
	// measured); stored says the run's results are stored (see
	// Manager.Stop).
	Stop(res *results.Run, stored bool) error
}

// Base is an Output that does nothing: an output embeds it and defines
// the methods it needs.
type Base struct{}

var _ Output = Base{}

// Start does nothing.
func (Base) Start(*results.Run) error { return nil }

// AddInterval does nothing.
func (Base) AddInterval(results.Interval, results.Histograms) {}

// Stop does nothing.
func (Base) Stop(*results.Run, bool) error { return nil }

// TopicRecorder is an Output that records the topics a run creates, so
// that a run killed outright still names them.
type TopicRecorder interface {
	// CreatingTopic is called before the topic is created.
	CreatingTopic(name string)
	// DeletedTopic is called once a created topic is deleted.
	DeletedTopic(name string)
}

// Storer is an Output that stores the run's results: the error of its
// Stop is the run's, and the outputs after it learn whether it stored
// them.
type Storer interface {
	Output
	// StoresRun marks the Output as a Storer.
	StoresRun()
}

// Manager fans a run out to its outputs. It is what the runner takes as
// its journal (runner.Journal). Not safe for concurrent use: the runner
// calls it from one goroutine.
type Manager struct {
	outputs []Output
	started int
	// warn receives what the outputs that are not Storers could not do.
	warn io.Writer
}

// NewManager returns a manager of outs, in that order; warnings go to
// warn.
func NewManager(warn io.Writer, outs ...Output) *Manager {
	return &Manager{outputs: outs, warn: warn}
}

// Start starts the outputs in order. If one fails, those started are
// stopped with nothing measured and its error is returned.
func (m *Manager) Start(head *results.Run) error {
	for _, o := range m.outputs {
		if err := o.Start(head); err != nil {
			_ = m.Stop(nil)
			return err
		}
		m.started++
	}
	return nil
}

// CreatingTopic hands the topic to the TopicRecorders.
func (m *Manager) CreatingTopic(name string) {
	for _, o := range m.outputs[:m.started] {
		if r, ok := o.(TopicRecorder); ok {
			r.CreatingTopic(name)
		}
	}
}

// DeletedTopic hands the topic to the TopicRecorders.
func (m *Manager) DeletedTopic(name string) {
	for _, o := range m.outputs[:m.started] {
		if r, ok := o.(TopicRecorder); ok {
			r.DeletedTopic(name)
		}
	}
}

// Interval hands an interval to every output.
func (m *Manager) Interval(iv results.Interval, h results.Histograms) {
	for _, o := range m.outputs[:m.started] {
		o.AddInterval(iv, h)
	}
}

// Stop stops the started outputs in order once the run ended with res
// (nil: nothing measured). Each is told whether the run is stored: at
// least one Storer stopped before it, and every one of them stored res.
// Stop returns what the Storers could not store; what the other outputs
// could not do it writes to the warning writer as one warning.
func (m *Manager) Stop(res *results.Run) error {
	var storeErrs, warnings []error
	storers := 0
	for _, o := range m.outputs[:m.started] {
		err := o.Stop(res, storers > 0 && len(storeErrs) == 0)
		if _, ok := o.(Storer); ok {
			storers++
			if err != nil {
				storeErrs = append(storeErrs, err)
			}
		} else if err != nil {
			warnings = append(warnings, err)
		}
	}
	m.started = 0
	if err := errors.Join(warnings...); err != nil {
		fmt.Fprintf(m.warn, "warning: %v\n", err)
	}
	return errors.Join(storeErrs...)
}
