package study

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// IndexSchema identifies the study index format.
const IndexSchema = "brokerbench/study/v1"

// Index is a study's results directory: study.json beside runs/KEY.json.
type Index struct {
	Schema    string    `json:"schema"`
	Name      string    `json:"name"`
	Source    string    `json:"source"`
	Scale     Scale     `json:"scale"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Columns are the study's report columns.
	Columns []string `json:"columns,omitempty"`
	// Published are the reference document's figures, for the report.
	Published *workload.Published `json:"published,omitempty"`
	Runs      []Entry             `json:"runs"`
}

// Entry is one run's state.
type Entry struct {
	Key       string          `json:"key"`
	Workload  string          `json:"workload"`
	Setup     string          `json:"setup"`
	Params    []results.Param `json:"params,omitempty"`
	Iteration int             `json:"iteration"`
	// Status is done, partial, failed or skipped.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Verdict is what the run's results say (results.Judge: "ok",
	// "target not held", "disturbed", ...), for a run that measured.
	Verdict string `json:"verdict,omitempty"`
	// File is the results file relative to the study directory.
	File string `json:"file,omitempty"`
}

// Run statuses.
const (
	Done    = "done"
	Partial = "partial"
	Failed  = "failed"
	Skipped = "skipped"
)

// Executor makes one run and returns its results (also partial ones, with
// an error). path is where the results will be written; a journal kept at
// results.JournalPath(path) is removed once they are.
type Executor func(ctx context.Context, r Run, path string) (*results.Run, error)

// Options configure Execute.
type Options struct {
	// Dir is the study's results directory.
	Dir   string
	Scale Scale
	Exec  Executor
	// Log receives a line per run; nil discards.
	Log io.Writer
	// Stored, if set, is called with each run made and the path of its
	// results once they are written.
	Stored func(res *results.Run, path string)
}

// Execute makes every run not already finished in opts.Dir, writing each
// run's results and the index as it goes, so an interrupted study resumes
// where it stopped. A failed run is recorded and the study goes on; when
// ctx ends, Execute records what it has and returns ctx's error.
//
// Runs are made setup by setup (see executionOrder), so that a local
// cluster a setup needs starts once rather than once per workload; the
// index lists the runs made in the plan's order (workload first).
func Execute(ctx context.Context, s *workload.Study, runs []Run, opts Options) (*Index, error) {
	logf := func(f string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, f+"\n", a...)
		}
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "runs"), 0o755); err != nil {
		return nil, err
	}
	idx := &Index{Schema: IndexSchema, Name: s.Name, Source: s.Source, Scale: opts.Scale, Columns: s.Columns, Published: s.Published}
	// made holds each run's entry at its place in the plan, once visited.
	made := make([]*Entry, len(runs))
	save := func() error {
		idx.Runs = idx.Runs[:0]
		for _, e := range made {
			if e != nil {
				idx.Runs = append(idx.Runs, *e)
			}
		}
		idx.UpdatedAt = time.Now().UTC()
		return results.Write(filepath.Join(opts.Dir, "study.json"), idx)
	}
	for i, at := range executionOrder(runs) {
		r := runs[at]
		if ctx.Err() != nil {
			return idx, fmt.Errorf("study interrupted after %d of %d runs: %w", i, len(runs), context.Cause(ctx))
		}
		e := Entry{Key: r.Key, Workload: r.Workload.Name, Setup: r.Setup.Name, Params: r.Params, Iteration: r.Iteration}
		rel := filepath.Join("runs", r.Key+".json")
		path := filepath.Join(opts.Dir, rel)
		// Numbered as in the plan (study --list), not in the order made.
		prefix := fmt.Sprintf("[%d/%d] %s:", at+1, len(runs), r.Key)
		switch prev, err := results.Read(path); {
		case r.Skip != "":
			e.Status, e.Reason = Skipped, r.Skip
			logf("%s skipped: %s", prefix, r.Skip)
		case err == nil && !prev.Partial:
			e.Status, e.File = Done, rel
			logf("%s done in an earlier session, kept", prefix)
		default:
			logf("%s running (%s warmup, %s)", prefix, r.Workload.Warmup, r.Workload.Duration)
			res, runErr := opts.Exec(ctx, r, path)
			if res != nil {
				res.Study = studyRun(s, r)
				res.Price = price(s, r)
				if err := results.Write(path, res); err != nil {
					return idx, err
				}
				// The results replace the run's journal, if it kept one.
				_ = os.Remove(results.JournalPath(path))
				e.File = rel
				if opts.Stored != nil {
					opts.Stored(res, path)
				}
			}
			switch {
			case res != nil && res.Partial:
				e.Status, e.Reason = Partial, res.PartialReason
			case res == nil:
				e.Status, e.Reason = Failed, fmt.Sprint(runErr)
			default:
				e.Status = Done
				if runErr != nil {
					e.Reason = runErr.Error()
				}
			}
			verdict := ""
			if res != nil {
				e.Verdict = results.Judge(res).Kind.String()
				verdict = "(" + e.Verdict + ")"
			}
			logf("%s %s %s %s", prefix, e.Status, verdict, e.Reason)
		}
		made[at] = &e
		if err := save(); err != nil {
			return idx, err
		}
	}
	return idx, save()
}

// executionOrder returns the places of runs in the order to make them:
// the runs of each setup together, setups in the order they first appear,
// and the plan's order within a setup (so a configuration's iterations
// stay back to back). Runs of one setup share its local cluster.
func executionOrder(runs []Run) []int {
	first := map[string]int{}
	order := make([]int, len(runs))
	for i, r := range runs {
		if _, ok := first[r.Setup.Name]; !ok {
			first[r.Setup.Name] = len(first)
		}
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(first[runs[a].Setup.Name], first[runs[b].Setup.Name])
	})
	return order
}

func studyRun(s *workload.Study, r Run) *results.StudyRun {
	return &results.StudyRun{Name: s.Name, Key: r.Key, Workload: r.Workload.Name, Setup: r.Setup.Name,
		Brokers: r.Setup.Brokers, Params: r.Params, Iteration: r.Iteration}
}

// price is the cost of a run's setup: the study's price per node-hour for
// its node count (default: the setup's brokers).
func price(s *workload.Study, r Run) *results.Price {
	p := s.Price
	if p == nil {
		return nil
	}
	nodes := p.Nodes
	if nodes == 0 {
		nodes = r.Setup.Brokers
	}
	return &results.Price{PerNodeHour: p.PerNodeHour, Nodes: nodes, Currency: p.Currency}
}

// ReadIndex loads a study directory's index.
func ReadIndex(dir string) (*Index, error) {
	var idx Index
	if err := results.ReadJSON(filepath.Join(dir, "study.json"), &idx); err != nil {
		return nil, err
	}
	if idx.Schema != IndexSchema {
		return nil, errors.New(dir + ": study.json has schema " + idx.Schema + ", this build reads " + IndexSchema)
	}
	return &idx, nil
}
