package history

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// PrintList writes one line per record: id, time, workload, broker and
// version, nodes, the main figures, verdict and labels.
func PrintList(w io.Writer, recs []Record) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tWORKLOAD\tBROKER\tVERSION\tNODES\tPUBLISH/S\tPUB P99 MS\tE2E P99 MS\tVERDICT\tLABELS")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Time.Format("2006-01-02 15:04"), r.Workload, r.Broker,
			orDash(r.Env.BrokerVersion), nodes0(r.Env.Nodes), value(r, "publishRate"), value(r, "publish.p99"), value(r, "e2e.p99"), r.Verdict, labels(r.Labels))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d run(s)\n", len(recs))
}

// PrintRecord writes everything a record holds.
func PrintRecord(w io.Writer, r *Record) {
	fmt.Fprintf(w, "id:        %s\ntime:      %s\norigin:    %s\nworkload:  %s\nbroker:    %s %s, %s node(s)\nbenchmark: %s\n",
		r.ID, r.Time.Format("2006-01-02 15:04:05 MST"), r.Origin, r.Workload, r.Broker, orDash(r.Env.BrokerVersion), nodes0(r.Env.Nodes), r.Benchmark)
	if r.Study != "" {
		fmt.Fprintf(w, "study:     %s\n", r.Study)
	}
	if len(r.Labels) > 0 {
		fmt.Fprintf(w, "labels:    %s\n", labels(r.Labels))
	}
	e := r.Env
	fmt.Fprintf(w, "verdict:   %s\nfile:      %s\nbrokerbench %s (commit %s, %s)\nmachine:   %s: %s, %d cores, %.1f GiB, %s %s %s\n",
		r.Verdict, r.File, orDash(e.BrokerbenchVersion), orDash(e.BrokerbenchCommit), orDash(e.GoVersion),
		orDash(e.Hostname), orDash(e.CPUModel), e.CPUCores, float64(e.MemoryBytes)/(1<<30), e.OS, e.Arch, e.Kernel)
	if len(r.Settings) > 0 {
		fmt.Fprintln(w, "settings:")
		for _, k := range slices.Sorted(maps.Keys(r.Settings)) {
			fmt.Fprintf(w, "  %s = %s\n", k, r.Settings[k])
		}
	}
	fmt.Fprintln(w, "figures:")
	for _, k := range slices.Sorted(maps.Keys(r.Figures)) {
		fmt.Fprintf(w, "  %-20s %s\n", k, figure(r.Figures[k]))
	}
}

// PrintTrend writes, for each series of recs holding metric, a sparkline
// of its values and a table of its runs.
func PrintTrend(w io.Writer, recs []Record, metric string) {
	shown := 0
	for _, s := range Group(recs) {
		values, runs := s.Values(metric)
		if len(values) == 0 {
			continue
		}
		shown++
		lo, hi := slices.Min(values), slices.Max(values)
		fmt.Fprintf(w, "%s\n%s  %s  min %s, max %s, %d run(s)\n", s.Title(), metric, Sparkline(values), figure(lo), figure(hi), len(values))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  TIME\tID\tVERSION\t%s\tVERDICT\n", strings.ToUpper(metric))
		for i, r := range runs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.Time.Format("2006-01-02 15:04"), r.ID, orDash(r.Env.BrokerVersion), figure(values[i]), r.Verdict)
		}
		tw.Flush()
	}
	if shown == 0 {
		fmt.Fprintf(w, "no run has %s; metrics: %s\n", metric, strings.Join(Metrics(recs), ", "))
	}
}

// sparks are the levels of a sparkline, lowest first.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values as a line of block characters, the lowest value
// the lowest block; equal values draw a flat line.
func Sparkline(values []float64) string {
	if len(values) == 0 {
		return ""
	}
	lo, hi := slices.Min(values), slices.Max(values)
	var b strings.Builder
	for _, v := range values {
		i := 0
		if hi > lo {
			i = int(math.Round((v - lo) / (hi - lo) * float64(len(sparks)-1)))
		}
		b.WriteRune(sparks[i])
	}
	return b.String()
}

// PrintCompare writes what differs between two runs (settings and
// environment), then their figures side by side with the change.
func PrintCompare(w io.Writer, a, b *Record) {
	fmt.Fprintf(w, "A: %s (%s, %s on %s)\nB: %s (%s, %s on %s)\n", a.ID, a.Time.Format("2006-01-02 15:04"), a.Workload, a.Broker,
		b.ID, b.Time.Format("2006-01-02 15:04"), b.Workload, b.Broker)
	diffs := Diff(a, b)
	if len(diffs) == 0 {
		fmt.Fprintln(w, "same benchmark, settings and environment")
	} else {
		fmt.Fprintln(w, "differences:")
		for _, d := range diffs {
			fmt.Fprintf(w, "  %s: %s -> %s\n", d.What, orNone(d.A), orNone(d.B))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tA\tB\tCHANGE\t")
	keys := map[string]bool{}
	for k := range a.Figures {
		keys[k] = true
	}
	for k := range b.Figures {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, okA := a.Figures[k]
		y, okB := b.Figures[k]
		change, verdict := "", ""
		switch {
		case okA && okB && x != 0:
			rel := (y - x) / math.Abs(x)
			change = fmt.Sprintf("%+.1f%%", 100*rel)
			if math.Abs(rel) >= DefaultThreshold {
				verdict = "better"
				if (rel > 0) != higherIsBetter[k] {
					verdict = "worse"
				}
			}
		case okA && okB && y != x:
			change = fmt.Sprintf("%+.4g", y-x)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k, optional(x, okA), optional(y, okB), change, verdict)
	}
	tw.Flush()
}

func value(r Record, metric string) string {
	v, ok := r.Figures[metric]
	return optional(v, ok)
}

func optional(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return figure(v)
}

func nodes0(n int) string {
	if n <= 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func labels(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
