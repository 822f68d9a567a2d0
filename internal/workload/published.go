package workload

import (
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// PublishedMetrics are the figures a study may record from its reference
// document, by their names in a study file.
var PublishedMetrics = []string{"publishRate", "publishMBps", "consumeRate", "publishP99", "e2eP99", "costPerBillion"}

// Published is what a study's reference document published: the figures,
// each tied to the runs that reproduce it, so that a report can put
// measured beside published values and compare the shapes (ratios
// between setups), since absolute figures from one machine cannot match a
// cloud cluster's.
type Published struct {
	// Source names the document and the tables the figures come from.
	Source  string            `json:"source"`
	Figures []PublishedFigure `json:"figures"`
}

// PublishedFigure is one published value and the runs it compares with.
type PublishedFigure struct {
	Label string `json:"label"`
	// Match selects the runs: "setup", "workload" and any swept
	// parameter's name, to the value the runs must have.
	Match map[string]string `json:"match"`
	// Metric is one of PublishedMetrics; Value its published value.
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	// RelativeTo, if set, is the label of another figure of the same
	// metric: the report compares this figure's ratio to it, published
	// against measured.
	RelativeTo string `json:"relativeTo,omitempty"`
	Line       int    `json:"-"`
}

// published decodes a study's published: section.
func (d *decoder) published(v *yaml.Node) *Published {
	p := &Published{}
	d.mapping(v, "published", map[string]fieldSetter{
		"source": stringField(&p.Source),
		"figures": func(d *decoder, key string, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, key, "must be a list of figures, each {label, match: {setup: ..., messageSize: ...}, metric: value, relativeTo}")
				return
			}
			for _, item := range v.Content {
				p.Figures = append(p.Figures, d.figures(item)...)
			}
		},
	})
	labels := map[string]PublishedFigure{}
	for _, f := range p.Figures {
		labels[f.Label+"\x00"+f.Metric] = f
	}
	for _, f := range p.Figures {
		if f.RelativeTo != "" {
			if _, ok := labels[f.RelativeTo+"\x00"+f.Metric]; !ok {
				d.errs = append(d.errs, &FieldError{File: d.file, Line: f.Line, Field: "relativeTo",
					Msg: fmt.Sprintf("figure %q: no figure labelled %q has %s", f.Label, f.RelativeTo, f.Metric)})
			}
		}
	}
	return p
}

// figures decodes one entry: a label, a match, a relativeTo, and one
// figure per metric given.
func (d *decoder) figures(n *yaml.Node) []PublishedFigure {
	base := PublishedFigure{Match: map[string]string{}, Line: n.Line}
	values := map[string]float64{}
	fields := map[string]fieldSetter{
		"label":      stringField(&base.Label),
		"relativeTo": stringField(&base.RelativeTo),
		"match": func(d *decoder, key string, v *yaml.Node) {
			if v.Kind != yaml.MappingNode {
				d.fail(v, key, "must be a mapping of setup, workload or a swept parameter to its value")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				base.Match[v.Content[i].Value] = v.Content[i+1].Value
			}
		},
	}
	for _, m := range PublishedMetrics {
		fields[m] = func(d *decoder, key string, v *yaml.Node) {
			s, ok := scalar(d, key, v, "a number")
			if !ok {
				return
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || x <= 0 {
				d.fail(v, key, "must be a positive number, got %q", s)
				return
			}
			values[key] = x
		}
	}
	d.mapping(n, "a published figure", fields)
	if base.Label == "" || len(base.Match) == 0 || len(values) == 0 {
		d.fail(n, "figures", "a figure needs a label, a match and at least one of %v", PublishedMetrics)
		return nil
	}
	var out []PublishedFigure
	for _, m := range PublishedMetrics {
		if v, ok := values[m]; ok {
			f := base
			f.Metric, f.Value = m, v
			out = append(out, f)
		}
	}
	return out
}

// checkPublished reports figures whose match names no setup, workload or
// swept parameter of the study.
func (s *Study) checkPublished() []error {
	if s.Published == nil {
		return nil
	}
	keys := map[string][]string{"setup": nil, "workload": nil}
	for _, st := range s.Setups {
		keys["setup"] = append(keys["setup"], st.Name)
		for _, p := range st.Sweep {
			keys[p.Name] = append(keys[p.Name], p.Values...)
		}
	}
	for _, w := range s.Workloads {
		keys["workload"] = append(keys["workload"], w.Name)
	}
	for _, p := range s.Sweep {
		keys[p.Name] = append(keys[p.Name], p.Values...)
	}
	var errs []error
	for _, f := range s.Published.Figures {
		for k, v := range f.Match {
			allowed, ok := keys[k]
			switch {
			case !ok:
				errs = append(errs, &FieldError{File: s.Source, Line: f.Line, Field: "match",
					Msg: fmt.Sprintf("figure %q matches on %q, which is neither setup, workload nor a swept parameter", f.Label, k)})
			case !slices.Contains(allowed, v):
				errs = append(errs, &FieldError{File: s.Source, Line: f.Line, Field: "match",
					Msg: fmt.Sprintf("figure %q: no %s is %q%s", f.Label, k, v, suggest(v, allowed))})
			}
		}
	}
	return errs
}
