// Package report turns results files and study directories into tables
// (HTML, Markdown, CSV), charts (SVG, drawn with gonum/plot) and one
// self-contained HTML report.
package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/study"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Input is everything a report shows: runs grouped into configurations
// (the iterations of one workload x setup x parameter values), and the
// study runs that were skipped.
type Input struct {
	Title   string
	Groups  []*Group
	Skipped []study.Entry
	// Columns chosen by the study; empty for the default.
	Columns []string
	// Sources are the paths the input was read from.
	Sources []string
	// Published are the reference figures of the studies read.
	Published []*workload.Published
}

// Group is one configuration and its iterations.
type Group struct {
	Label string
	Runs  []*results.Run
}

// first returns the group's first run, which describes the configuration.
func (g *Group) first() *results.Run { return g.Runs[0] }

// Load reads results files and study directories. A study directory
// contributes its finished runs (done or partial) and its skipped ones.
func Load(paths []string) (*Input, error) {
	in := &Input{}
	byKey := map[string]*Group{}
	add := func(r *results.Run, source string) {
		key, label := groupKey(r, source)
		g := byKey[key]
		if g == nil {
			g = &Group{Label: label}
			byKey[key] = g
			in.Groups = append(in.Groups, g)
		}
		g.Runs = append(g.Runs, r)
	}
	for _, p := range paths {
		in.Sources = append(in.Sources, p)
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("report input %s: %w", p, err)
		}
		if !st.IsDir() {
			r, err := results.Read(p)
			if err != nil {
				return nil, err
			}
			add(r, p)
			continue
		}
		idx, err := study.ReadIndex(p)
		if err != nil {
			return nil, fmt.Errorf("%s is a directory but not a study results directory: %w", p, err)
		}
		if in.Title == "" {
			in.Title = idx.Name
		}
		if len(in.Columns) == 0 {
			in.Columns = idx.Columns
		}
		if idx.Published != nil {
			in.Published = append(in.Published, idx.Published)
		}
		for _, e := range idx.Runs {
			switch {
			case e.Status == study.Skipped:
				in.Skipped = append(in.Skipped, e)
			case e.File != "":
				r, err := results.Read(filepath.Join(p, e.File))
				if err != nil {
					return nil, err
				}
				add(r, filepath.Join(p, e.File))
			}
		}
	}
	if len(in.Groups) == 0 {
		return nil, fmt.Errorf("no runs to report in %s", strings.Join(paths, ", "))
	}
	for _, g := range in.Groups {
		sort.SliceStable(g.Runs, func(i, j int) bool { return iteration(g.Runs[i]) < iteration(g.Runs[j]) })
	}
	if in.Title == "" {
		in.Title = in.Groups[0].first().Workload.Name
		if len(in.Groups) > 1 {
			in.Title = fmt.Sprintf("%d configurations", len(in.Groups))
		}
	}
	return in, nil
}

func iteration(r *results.Run) int {
	if r.Study != nil {
		return r.Study.Iteration
	}
	return 0
}

// groupKey identifies a run's configuration: a study run's workload, setup
// and parameters; a single run is its own group, labelled by its file.
func groupKey(r *results.Run, source string) (key, label string) {
	if s := r.Study; s != nil {
		parts := []string{s.Setup}
		if s.Workload != "" {
			parts = append([]string{s.Workload}, parts...)
		}
		for _, p := range s.Params {
			parts = append(parts, p.Name+"="+p.Value)
		}
		label = strings.Join(parts, " / ")
		return s.Name + "\x00" + label, label
	}
	label = strings.TrimSuffix(filepath.Base(source), ".json")
	return source, label
}

// sweptParams lists the parameter names that vary across the groups, in
// order of first appearance.
func (in *Input) sweptParams() []string {
	var names []string
	for _, g := range in.Groups {
		if s := g.first().Study; s != nil {
			for _, p := range s.Params {
				if !slices.Contains(names, p.Name) {
					names = append(names, p.Name)
				}
			}
		}
	}
	return names
}

// param returns the value of a swept parameter in r, or "".
func param(r *results.Run, name string) string {
	if r.Study == nil {
		return ""
	}
	for _, p := range r.Study.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}
