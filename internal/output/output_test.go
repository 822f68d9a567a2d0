package output

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// recorder is an Output that notes what it is told in a shared log.
type recorder struct {
	name     string
	log      *[]string
	startErr error
	stopErr  error
}

func (r *recorder) note(s string) { *r.log = append(*r.log, r.name+" "+s) }

func (r *recorder) Start(*results.Run) error {
	r.note("start")
	return r.startErr
}

func (r *recorder) AddInterval(results.Interval, results.Histograms) { r.note("interval") }

func (r *recorder) Stop(_ *results.Run, stored bool) error {
	if stored {
		r.note("stop stored")
	} else {
		r.note("stop")
	}
	return r.stopErr
}

func (r *recorder) CreatingTopic(name string) { r.note("creating " + name) }
func (r *recorder) DeletedTopic(name string)  { r.note("deleted " + name) }

// store is a recorder that stores the run.
type store struct{ recorder }

func (*store) StoresRun() {}

// TestManager: the manager hands a run to its outputs in order, topics to
// those that record them, tells each whether the Storers before it stored
// the run, returns what they could not store and warns once of the rest;
// an output that cannot start stops those started before it.
func TestManager(t *testing.T) {
	for _, tc := range []struct {
		name string
		// outs builds the outputs on the log.
		outs    func(log *[]string) []Output
		want    string
		err     string
		warning string
	}{
		{
			"the journal after the files learns they are stored",
			func(log *[]string) []Output {
				return []Output{&recorder{name: "progress", log: log}, &store{recorder{name: "file", log: log}}, &recorder{name: "journal", log: log}}
			},
			"progress start|file start|journal start|progress creating t|file creating t|journal creating t|progress interval|file interval|journal interval|" +
				"progress stop|file stop|journal stop stored", "", "",
		},
		{
			"a file not written: the journal is kept and the error is the run's",
			func(log *[]string) []Output {
				return []Output{&store{recorder{name: "file", log: log, stopErr: errors.New("disk full")}}, &recorder{name: "journal", log: log}}
			},
			"file start|journal start|file creating t|journal creating t|file interval|journal interval|file stop|journal stop", "disk full", "",
		},
		{
			"no Storer: nothing is stored; the others' errors are one warning",
			func(log *[]string) []Output {
				return []Output{&recorder{name: "registry", log: log, stopErr: errors.New("registry unwritable")}, &recorder{name: "journal", log: log, stopErr: errors.New("journal unwritable")}}
			},
			"registry start|journal start|registry creating t|journal creating t|registry interval|journal interval|registry stop|journal stop", "",
			"warning: registry unwritable\njournal unwritable\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var warn strings.Builder
			m := NewManager(&warn, tc.outs(&log)...)
			if err := m.Start(&results.Run{}); err != nil {
				t.Fatal(err)
			}
			m.CreatingTopic("t")
			m.Interval(results.Interval{}, results.Histograms{})
			err := m.Stop(&results.Run{})
			if got := strings.Join(log, "|"); got != tc.want {
				t.Errorf("calls\n%s\nwant\n%s", got, tc.want)
			}
			if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if warn.String() != tc.warning {
				t.Errorf("warning %q, want %q", warn.String(), tc.warning)
			}
		})
	}
	t.Run("an output that cannot start", func(t *testing.T) {
		var log []string
		m := NewManager(nil, &recorder{name: "live", log: &log}, &recorder{name: "journal", log: &log, startErr: errors.New("no room")}, &recorder{name: "never", log: &log})
		if err := m.Start(&results.Run{}); err == nil || err.Error() != "no room" {
			t.Errorf("start: %v", err)
		}
		if got, want := strings.Join(log, "|"), "live start|journal start|live stop"; got != want {
			t.Errorf("calls %s, want %s", got, want)
		}
	})
}

// TestFiles: the results file says where it went and whether the run is
// partial; the OMB file says where it went; neither writes a run that
// measured nothing.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	run := &results.Run{Schema: results.Schema, ID: "x", Partial: true, Workload: &workload.Workload{Name: "w"}}
	var said strings.Builder
	for _, f := range []File{ResultsFile(&said, filepath.Join(dir, "r.json")), OMBFile(&said, filepath.Join(dir, "omb.json"))} {
		if err := f.Stop(nil, false); err != nil {
			t.Errorf("%s of nothing: %v", f.Label, err)
		}
		if err := f.Stop(run, false); err != nil {
			t.Errorf("%s: %v", f.Label, err)
		}
	}
	want := "results: " + filepath.Join(dir, "r.json") + " (PARTIAL)\nOMB results: " + filepath.Join(dir, "omb.json") + "\n"
	if said.String() != want {
		t.Errorf("said %q, want %q", said.String(), want)
	}
	if _, err := results.Read(filepath.Join(dir, "r.json")); err != nil {
		t.Error(err)
	}
}
