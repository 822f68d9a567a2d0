// Package history remembers every benchmark run: one record per run in an
// append-only store (a file of JSON lines, one record each), with the
// run's identity, where it ran, its summary figures and the path of its
// full results file, which stays where the run wrote it. Records are
// listed, grouped into series of the same benchmark on the same kind of
// target, and searched for the runs at which a figure changed level
// (package changepoint), with what changed between the runs on either
// side (see Check).
//
// # The store
//
// A store is one file. A writer takes an exclusive lock on it (flock),
// appends whole lines and syncs; a reader takes a shared lock and reads
// every line. Writers in several goroutines or processes therefore never
// interleave. A writer killed in the middle of a line leaves a torn last
// line: readers skip lines that do not decode and count them (Records'
// damaged count), and the next writer starts a new line first, so a torn
// line never spoils a record written after it. Records carry their format
// version ("v"); a reader skips, and counts, records of a version newer
// than its own (written by a later brokerbench).
//
// Queries read the whole file and filter in memory. On a 2-core machine
// busy with other work (load 6), BenchmarkRecords reads 5000 records of
// 2.4 KB in 0.35 s, and BenchmarkAdd appends one to a store of 1000 in
// 3 ms, the sync and the scan for its id included. That is slower than
// an SQLite query, and fast enough for a history of thousands of runs,
// each of which took minutes; SQLite in pure Go would have added 4.6 to
// 5.7 MB to the binary.
package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/brokerbench/brokerbench/internal/secret"
)

// PathEnv names the history store's path when set; "none" or "off" turns
// recording off.
const PathEnv = "BROKERBENCH_HISTORY"

// FileName is the store's file name in the user's data directory.
const FileName = "history.jsonl"

// DefaultPath is the store used when none is named: $BROKERBENCH_HISTORY,
// else $XDG_DATA_HOME/brokerbench/history.jsonl, else
// ~/.local/share/brokerbench/history.jsonl. It returns "" when
// $BROKERBENCH_HISTORY is "none" or "off" (recording off), or when no home
// directory is known.
func DefaultPath() string {
	switch p := os.Getenv(PathEnv); p {
	case "none", "off":
		return ""
	case "":
	default:
		return p
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "brokerbench", FileName)
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "share", "brokerbench", FileName)
}

// ErrNotFound is returned, wrapped, for a record id no record has.
var ErrNotFound = errors.New("no such record")

// Store is a history file. It holds no open file between calls and is
// safe for concurrent use, by goroutines and by processes.
type Store struct {
	// Path is the store's file.
	Path string
}

// Open returns the store at path; the file is created by its first Add.
func Open(path string) *Store { return &Store{Path: path} }

// Add appends the records whose id the store does not hold yet, in one
// locked append, and returns how many it added. A record without an id,
// or with one given twice, is an error.
func (s *Store) Add(recs ...Record) (int, error) {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	f, err := os.OpenFile(s.Path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	if err := lock(f, syscall.LOCK_EX); err != nil {
		return 0, err
	}
	defer unlock(f)
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("history: read %s: %w", s.Path, err)
	}
	have := ids(data)
	var buf bytes.Buffer
	if len(data) > 0 && data[len(data)-1] != '\n' {
		buf.WriteByte('\n') // a writer was killed in the middle of a line
	}
	added := 0
	for _, r := range recs {
		if r.ID == "" {
			return 0, errors.New("history: a record without an id")
		}
		if have[r.ID] {
			continue
		}
		have[r.ID] = true
		r.Version = Version
		line, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("history: encode %s: %w", r.ID, err)
		}
		buf.Write(secret.RedactBytes(line))
		buf.WriteByte('\n')
		added++
	}
	if added == 0 {
		return 0, nil
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return 0, fmt.Errorf("history: append to %s: %w", s.Path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("history: sync %s: %w", s.Path, err)
	}
	return added, nil
}

// Contents is what a store holds.
type Contents struct {
	// Records are in the order they were added.
	Records []Record
	// Damaged counts lines that did not decode (torn by a killed writer,
	// or edited by hand); Newer counts records of a version newer than
	// this build reads. Neither is in Records.
	Damaged, Newer int
}

// Records reads every record. A store that does not exist yet is empty.
func (s *Store) Records() (*Contents, error) {
	f, err := os.Open(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return &Contents{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	if err := lock(f, syscall.LOCK_SH); err != nil {
		return nil, err
	}
	defer unlock(f)
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", s.Path, err)
	}
	return decodeLines(data), nil
}

// Get returns the record with id, or the only one whose id starts with
// it; the error wraps ErrNotFound when none (or several) match.
func (c *Contents) Get(id string) (*Record, error) {
	var found []*Record
	for i := range c.Records {
		r := &c.Records[i]
		if r.ID == id {
			return r, nil
		}
		if len(id) >= 4 && len(r.ID) > len(id) && r.ID[:len(id)] == id {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil, fmt.Errorf("%w: %s is the start of %d ids; give more of it", ErrNotFound, id, len(found))
}

// ids returns the ids of a store's content. Add writes every line as
// {"v":N,"id":"...", so the id is read from that prefix, without decoding
// the line; a line of another shape is decoded.
func ids(data []byte) map[string]bool {
	have := map[string]bool{}
	for line := range bytes.Lines(data) {
		if id, ok := prefixID(line); ok {
			have[id] = true
			continue
		}
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &r) == nil {
			have[r.ID] = true
		}
	}
	return have
}

// prefixID reads the id of a line that starts {"v":N,"id":"ID", with an
// ID free of escapes.
func prefixID(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"v":`))
	if !ok {
		return "", false
	}
	version, rest, ok := bytes.Cut(rest, []byte(`,"id":"`))
	if !ok || len(version) == 0 || bytes.ContainsFunc(version, func(r rune) bool { return r < '0' || r > '9' }) {
		return "", false
	}
	id, _, ok := bytes.Cut(rest, []byte(`"`))
	if !ok || bytes.IndexByte(id, '\\') >= 0 || len(id) > 200 {
		return "", false
	}
	return string(id), true
}

// decodeLines decodes a store's content, skipping what does not decode.
func decodeLines(data []byte) *Contents {
	c := &Contents{}
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		r, err := decodeRecord(line)
		switch {
		case errors.Is(err, errNewer):
			c.Newer++
		case err != nil:
			c.Damaged++
		default:
			c.Records = append(c.Records, *r)
		}
	}
	return c
}

func lock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("history: lock %s: %w", f.Name(), err)
			}
			return nil
		}
	}
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
