package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/secret"
)

// JournalSchema names the journal format.
const JournalSchema = "brokerbench/journal/v1"

// JournalSuffix ends a journal's file name: the results path plus it.
const JournalSuffix = ".journal.jsonl"

// JournalPath returns the journal path of a results path.
func JournalPath(resultsPath string) string { return resultsPath + JournalSuffix }

// journalLine is one line of a journal: exactly one field is set. The first
// line is the head: the run as known before it produced (identity,
// workload, driver, environment); then topics as they are created and
// deleted, and every interval with its histograms, as sampled.
type journalLine struct {
	Head          *Run        `json:"head,omitempty"`
	CreatingTopic string      `json:"creatingTopic,omitempty"`
	DeletedTopic  string      `json:"deletedTopic,omitempty"`
	Interval      *Interval   `json:"interval,omitempty"`
	Histograms    *Histograms `json:"histograms,omitempty"`
}

// Journal appends a run's progress to a file as it happens, one JSON line
// per event, so that a run killed outright (SIGKILL, the out-of-memory
// killer, a lost machine) leaves what it measured: ReadJournal turns the
// file into a partial result. It is safe for concurrent use; after Close,
// or after a write failed, further events are dropped and Err reports the
// first failure.
type Journal struct {
	mu   sync.Mutex
	path string
	f    *os.File
	err  error
}

// CreateJournal starts the journal at path with head, the run as known
// before it produced; head's intervals are not written.
func CreateJournal(path string, head *Run) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create journal directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	j := &Journal{path: path, f: f}
	h := *head
	h.Schema, h.Intervals = JournalSchema, nil
	j.write(journalLine{Head: &h})
	return j, j.Err()
}

// CreatingTopic records a topic about to be created.
func (j *Journal) CreatingTopic(name string) { j.write(journalLine{CreatingTopic: name}) }

// DeletedTopic records a created topic that was deleted.
func (j *Journal) DeletedTopic(name string) { j.write(journalLine{DeletedTopic: name}) }

// Interval records a sampled interval and its encoded histograms.
func (j *Journal) Interval(iv Interval, h Histograms) {
	j.write(journalLine{Interval: &iv, Histograms: &h})
}

func (j *Journal) write(l journalLine) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.err != nil {
		return
	}
	data, err := json.Marshal(l)
	if err == nil {
		// One write per line: a line is whole in the file or absent, but
		// for a crash in the middle of the write, which ReadJournal skips.
		_, err = j.f.Write(append(secret.RedactBytes(data), '\n'))
	}
	if err != nil {
		j.err = fmt.Errorf("journal %s: %w", j.path, err)
	}
}

// Err returns the first write failure.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Close closes the journal and, if remove is set (the results were
// written), deletes its file.
func (j *Journal) Close(remove bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return j.err
	}
	err := j.f.Close()
	j.f = nil
	if remove {
		if rmErr := os.Remove(j.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
	}
	return errors.Join(j.err, err)
}

// ReadJournal rebuilds a partial result from a journal: the head, every
// whole interval, the measurement aggregate merged from the measured
// intervals' histograms, the counts summed over all intervals, and the
// topics that were created and not deleted (left behind if the run died).
func ReadJournal(name string, data []byte) (*Run, []string, error) {
	var run *Run
	var live []string
	agg := struct{ pub, svc, lag, e2e *hdrhistogram.Histogram }{metrics.NewHDR(), metrics.NewHDR(), metrics.NewHDR(), metrics.NewHDR()}
	lines := bytes.Split(data, []byte("\n"))
	for i, text := range lines {
		n := i + 1
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var l journalLine
		if err := json.Unmarshal(text, &l); err != nil {
			if i == len(lines)-1 && run != nil {
				break // a last line cut short by the crash
			}
			return nil, nil, fmt.Errorf("%s:%d: not a journal line: %w", name, n, err)
		}
		switch {
		case l.Head != nil:
			if run != nil {
				return nil, nil, fmt.Errorf("%s:%d: a second head", name, n)
			}
			if l.Head.Schema != JournalSchema || l.Head.Workload == nil {
				return nil, nil, fmt.Errorf("%s:%d: not a brokerbench journal (schema %q, this build reads %q)", name, n, l.Head.Schema, JournalSchema)
			}
			if l.Head.IntervalSeconds < 0 || l.Head.Workload.MessageSize < 0 || l.Head.Workload.Topics < 0 {
				return nil, nil, fmt.Errorf("%s:%d: a journal with negative sizes was not written by brokerbench", name, n)
			}
			run = l.Head
		case run == nil:
			return nil, nil, fmt.Errorf("%s:%d: journal without a head line first", name, n)
		case l.CreatingTopic != "":
			live = append(live, l.CreatingTopic)
		case l.DeletedTopic != "":
			if i := slices.Index(live, l.DeletedTopic); i >= 0 {
				live = slices.Delete(live, i, i+1)
			}
		case l.Interval != nil:
			run.Intervals = append(run.Intervals, *l.Interval)
			if (l.Interval.Phase == Measure || l.Interval.Phase == BacklogDrain) && l.Histograms != nil {
				if err := mergeEncoded(agg.pub, agg.svc, agg.lag, agg.e2e, *l.Histograms); err != nil {
					return nil, nil, fmt.Errorf("%s:%d: %w", name, n, err)
				}
			}
		}
	}
	if run == nil {
		return nil, nil, fmt.Errorf("%s: empty journal", name)
	}
	run.Schema = Schema
	run.Partial = true
	last := 0.0
	if k := len(run.Intervals); k > 0 {
		last = run.Intervals[k-1].EndSeconds
	}
	run.PartialReason = fmt.Sprintf("rebuilt from the journal of a run that did not finish (killed, or its machine lost); the last interval ends at %.1f s", last)
	run.Measured, run.Counts = journalTotals(run, agg.pub, agg.svc, agg.lag, agg.e2e)
	for dst, h := range map[*string]*hdrhistogram.Histogram{
		&run.Histograms.PublishLatency: agg.pub, &run.Histograms.ServiceTime: agg.svc,
		&run.Histograms.SendLag: agg.lag, &run.Histograms.EndToEndLatency: agg.e2e,
	} {
		enc, err := metrics.Encode(h)
		if err != nil {
			return nil, nil, err
		}
		*dst = enc
	}
	return run, live, nil
}

// mergeEncoded merges an interval's encoded histograms into the
// aggregates.
func mergeEncoded(pub, svc, lag, e2e *hdrhistogram.Histogram, h Histograms) error {
	for _, p := range []struct {
		dst *hdrhistogram.Histogram
		enc string
	}{{pub, h.PublishLatency}, {svc, h.ServiceTime}, {lag, h.SendLag}, {e2e, h.EndToEndLatency}} {
		if p.enc == "" {
			continue
		}
		d, err := metrics.Decode(p.enc)
		if err != nil {
			return err
		}
		p.dst.Merge(d)
	}
	return nil
}

// journalTotals computes the measured aggregate and the counts of a run
// rebuilt from its intervals.
func journalTotals(run *Run, pub, svc, lag, e2e *hdrhistogram.Histogram) (Aggregate, Counts) {
	var m Aggregate
	var c Counts
	for _, iv := range run.Intervals {
		c.Sent += iv.Sent
		c.Acked += iv.Acked
		c.Failed += iv.Failed
		c.Consumed += iv.Consumed
		if iv.Phase == Measure || iv.Phase == BacklogDrain {
			m.DurationSeconds += iv.EndSeconds - iv.StartSeconds
			m.Sent += iv.Sent
			m.Acked += iv.Acked
			m.Failed += iv.Failed
			m.Consumed += iv.Consumed
		}
	}
	c.Unacked = c.Sent - c.Acked - c.Failed
	if m.DurationSeconds > 0 {
		size := float64(run.Workload.MessageSize)
		m.PublishRate, m.ConsumeRate = float64(m.Acked)/m.DurationSeconds, float64(m.Consumed)/m.DurationSeconds
		m.PublishMBps, m.ConsumeMBps = m.PublishRate*size/1e6, m.ConsumeRate*size/1e6
	}
	m.PublishLatency, m.ServiceTime = metrics.Summarize(pub), metrics.Summarize(svc)
	m.SendLag, m.EndToEndLatency = metrics.Summarize(lag), metrics.Summarize(e2e)
	return m, c
}

// IsJournal reports whether path names a journal.
func IsJournal(path string) bool { return strings.HasSuffix(path, JournalSuffix) }
