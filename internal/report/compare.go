package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// compared are the figures a comparison puts side by side.
var compared = []string{"publishRate", "consumeRate", "publishP50", "publishP99", "e2eP50", "e2eP99"}

// Compare builds the delta table of two inputs: a row per configuration
// present in both and figure, with A's and B's medians and B's change
// relative to A. Two inputs of one configuration each (two results files)
// are compared with each other whatever their names; otherwise
// configurations are matched by workload, setup and parameter values.
// A configuration with a partial run is marked "(partial)".
func Compare(a, b *Input) (*Table, error) {
	t := &Table{Title: "Comparison",
		Headers:    []string{"Configuration", "Figure", "A", "B", "Change"},
		CSVHeaders: []string{"configuration", "figure", "a", "b", "change"}}
	type pair struct {
		label  string
		ga, gb *Group
	}
	var pairs []pair
	if len(a.Groups) == 1 && len(b.Groups) == 1 {
		label := a.Groups[0].Label
		if l := b.Groups[0].Label; l != label {
			label += " vs " + l
		}
		pairs = append(pairs, pair{label, a.Groups[0], b.Groups[0]})
	} else {
		byLabel := map[string]*Group{}
		for _, g := range b.Groups {
			byLabel[g.Label] = g
		}
		for _, ga := range a.Groups {
			if gb := byLabel[ga.Label]; gb != nil {
				pairs = append(pairs, pair{ga.Label, ga, gb})
			}
		}
	}
	for _, p := range pairs {
		ga, gb := p.ga, p.gb
		label := p.label
		if ga.partial() || gb.partial() {
			label += " (partial)"
		}
		for _, id := range compared {
			c := columns[id]
			va, vb := median(ga, c), median(gb, c)
			if math.IsNaN(va) && math.IsNaN(vb) {
				continue
			}
			change, changeCSV := "–", ""
			if va != 0 && !math.IsNaN(va) && !math.IsNaN(vb) {
				d := (vb - va) / va * 100
				change, changeCSV = fmt.Sprintf("%+.1f%%", d), csvNum(d)
			}
			t.Rows = append(t.Rows, []string{label, c.header, formatNum(va, c.digits), formatNum(vb, c.digits), change})
			t.CSV = append(t.CSV, []string{label, id, csvNum(va), csvNum(vb), changeCSV})
		}
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("the two inputs share no configuration: A has %s; B has %s", labels(a), labels(b))
	}
	return t, nil
}

// partial reports whether any of the group's runs is partial.
func (g *Group) partial() bool {
	for _, r := range g.Runs {
		if r.Partial {
			return true
		}
	}
	return false
}

func median(g *Group, c column) float64 {
	var v []float64
	for _, r := range g.Runs {
		if x := c.num(r); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	m, _, _ := spread(v)
	return m
}

func labels(in *Input) string {
	var l []string
	for _, g := range in.Groups {
		l = append(l, g.Label)
	}
	return strings.Join(l, ", ")
}

// Merge combines two inputs for one report, naming each group after its
// input ("A: ...", "B: ...") so that the charts overlay them.
func Merge(a, b *Input, nameA, nameB string) *Input {
	out := &Input{Title: fmt.Sprintf("%s vs %s", nameA, nameB), Columns: a.Columns}
	for _, side := range []struct {
		in   *Input
		name string
	}{{a, nameA}, {b, nameB}} {
		for _, g := range side.in.Groups {
			out.Groups = append(out.Groups, &Group{Label: side.name + ": " + g.Label, Runs: g.Runs})
		}
		out.Skipped = append(out.Skipped, side.in.Skipped...)
		out.Sources = append(out.Sources, side.in.Sources...)
	}
	if len(out.Columns) == 0 {
		out.Columns = []string{"publishRate", "publishMBps", "consumeRate", "publishP50", "publishP99", "e2eP50", "e2eP99", "lost"}
	}
	out.Columns = append([]string{"configuration"}, out.Columns...)
	return out
}

// sideName names an input by its path for comparisons.
func sideName(path string) string {
	return strings.TrimSuffix(filepath.Base(filepath.Clean(path)), ".json")
}

// CompareLabels returns the short names of two input paths.
func CompareLabels(a, b string) (string, string) {
	na, nb := sideName(a), sideName(b)
	if na == nb {
		return "A", "B"
	}
	return na, nb
}
