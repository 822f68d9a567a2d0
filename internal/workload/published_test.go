package workload

import (
	"strings"
	"testing"
)

const publishedStudy = `name: s
workload: {name: w, messageSize: 100}
setups:
  - {name: one, brokers: 1}
  - {name: three, brokers: 3}
sweep:
  messageSize: [100, 1000]
published:
  source: a report
  figures:
`

func TestPublishedFigures(t *testing.T) {
	s, err := ParseStudy("s.yaml", []byte(publishedStudy+`    - {label: A, match: {setup: one}, publishRate: 1000, publishMBps: 2.5}
    - {label: B, match: {setup: three, messageSize: "1000"}, publishRate: 3000, relativeTo: A}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Published.Figures
	if s.Published.Source != "a report" || len(f) != 3 || f[0].Metric != "publishRate" || f[1].Metric != "publishMBps" || f[1].Value != 2.5 ||
		f[2].RelativeTo != "A" || f[2].Match["messageSize"] != "1000" {
		t.Fatalf("figures %+v", f)
	}
}

func TestPublishedFigureErrors(t *testing.T) {
	for name, tc := range map[string]struct{ figure, want string }{
		"unknown setup":    {`{label: A, match: {setup: tree}, publishRate: 1}`, `s.yaml:11: field "match": figure "A": no setup is "tree" (did you mean "three"?)`},
		"unknown key":      {`{label: A, match: {partitions: "2"}, publishRate: 1}`, `neither setup, workload nor a swept parameter`},
		"unswept value":    {`{label: A, match: {messageSize: "5"}, publishRate: 1}`, `no messageSize is "5"`},
		"no metric":        {`{label: A, match: {setup: one}}`, `at least one of`},
		"bad value":        {`{label: A, match: {setup: one}, publishRate: -3}`, `must be a positive number`},
		"unknown relative": {`{label: A, match: {setup: one}, publishRate: 1, relativeTo: Z}`, `no figure labelled "Z" has publishRate`},
		"unknown metric":   {`{label: A, match: {setup: one}, throughput: 1}`, `unknown field in a published figure`},
	} {
		_, err := ParseStudy("s.yaml", []byte(publishedStudy+"    - "+tc.figure+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
}
