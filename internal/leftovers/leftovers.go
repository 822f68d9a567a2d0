// Package leftovers remembers, on this machine, the topics each run
// creates, so that topics a dead run left behind (killed by SIGKILL or the
// out-of-memory killer, its teardown abandoned) can be found and removed by
// the next run against the same broker, or by 'brokerbench clean'.
//
// The registry is a directory of one small JSON file per live run, written
// before each topic is created and removed when the run's topics are gone.
// A file whose process is no longer running belongs to a dead run.
package leftovers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/proc"
)

// Entry is one run's record.
type Entry struct {
	RunID     string    `json:"runId"`
	PID       int       `json:"pid"`
	Exe       string    `json:"exe"` // the run's executable, against PID reuse
	StartedAt time.Time `json:"startedAt"`
	Driver    string    `json:"driver"`
	// Target identifies the broker: its endpoints as the run used them,
	// or the driver config that named them.
	Target string   `json:"target"`
	Topics []string `json:"topics"`
	// Journal is the run's journal, if it kept one.
	Journal string `json:"journal,omitempty"`
}

// Registry is the directory of entries.
type Registry struct{ dir string }

// Open returns the registry in dir; the directory is created on first use.
func Open(dir string) *Registry { return &Registry{dir: dir} }

func (r *Registry) path(runID string) string { return filepath.Join(r.dir, runID+".json") }

// Track starts recording e's topics for the live run of this process.
func (r *Registry) Track(e Entry) *Tracker {
	e.PID = os.Getpid()
	e.Exe, _ = os.Executable()
	return &Tracker{reg: r, e: e}
}

// Dead returns the entries of runs that are no longer running, oldest
// first; unreadable entries are skipped.
func (r *Registry) Dead() ([]Entry, error) {
	files, err := filepath.Glob(filepath.Join(r.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var dead []Entry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(data, &e) != nil || e.RunID == "" {
			continue
		}
		if !running(e.PID, e.Exe) {
			dead = append(dead, e)
		}
	}
	sort.Slice(dead, func(i, j int) bool { return dead[i].StartedAt.Before(dead[j].StartedAt) })
	return dead, nil
}

// Forget removes a run's entry.
func (r *Registry) Forget(runID string) error {
	if err := os.Remove(r.path(runID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Update records that a dead run's remaining topics are now topics; with
// none left, it forgets the run.
func (r *Registry) Update(e Entry, topics []string) error {
	if len(topics) == 0 {
		return r.Forget(e.RunID)
	}
	e.Topics = topics
	return r.write(e)
}

func (r *Registry) write(e Entry) error {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp := r.path(e.RunID) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.path(e.RunID))
}

// running reports whether pid is a live process of the executable exe: a
// zombie, or a live process of another program (the PID reused), is not
// the run.
func running(pid int, exe string) bool {
	if !proc.Live(pid) {
		return false
	}
	got, err := proc.Executable(pid)
	if err != nil || exe == "" {
		return true // cannot tell: assume it is the run
	}
	return got == exe
}

// Tracker records one live run's topics. It is safe for concurrent use;
// the first failure to write is kept for Err.
type Tracker struct {
	mu  sync.Mutex
	reg *Registry
	e   Entry
	err error
}

// CreatingTopic records a topic before it is created.
func (t *Tracker) CreatingTopic(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.e.Topics = append(t.e.Topics, name)
	t.keep(t.reg.write(t.e))
}

// DeletedTopic records that a topic is gone; with none left, the run's
// entry is removed.
func (t *Tracker) DeletedTopic(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.e.Topics, name); i >= 0 {
		t.e.Topics = slices.Delete(t.e.Topics, i, i+1)
	}
	if len(t.e.Topics) == 0 {
		t.keep(t.reg.Forget(t.e.RunID))
		return
	}
	t.keep(t.reg.write(t.e))
}

// Release removes the run's entry whatever topics remain: for a run that
// keeps its topics on purpose.
func (t *Tracker) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keep(t.reg.Forget(t.e.RunID))
}

func (t *Tracker) keep(err error) {
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("topic registry %s: %w", t.reg.dir, err)
	}
}

// Err returns the first failure to write the registry.
func (t *Tracker) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
