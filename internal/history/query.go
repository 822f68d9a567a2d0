package history

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/changepoint"
)

// Filter selects records; its zero value selects all.
type Filter struct {
	// Workload and Broker match the names exactly; Version is the broker
	// version or its start, or the start of one of its words ("4.1" and
	// "Apache Kafka 4" match "Apache Kafka 4.1.0").
	Workload, Broker, Version string
	// Since, if set, keeps the records of runs started at or after it.
	Since time.Time
	// Labels must all be on the record with these values.
	Labels map[string]string
}

// Keep reports whether r passes f.
func (f Filter) Keep(r *Record) bool {
	switch {
	case f.Workload != "" && r.Workload != f.Workload,
		f.Broker != "" && r.Broker != f.Broker,
		f.Version != "" && !versionMatches(r.Env.BrokerVersion, f.Version),
		!f.Since.IsZero() && r.Time.Before(f.Since):
		return false
	}
	for k, v := range f.Labels {
		if have, ok := r.Labels[k]; !ok || have != v {
			return false
		}
	}
	return true
}

// versionMatches reports whether the broker version have starts with
// want, or one of its words does.
func versionMatches(have, want string) bool {
	return strings.HasPrefix(have, want) || slices.ContainsFunc(strings.Fields(have), func(w string) bool { return strings.HasPrefix(w, want) })
}

// Select returns the records passing f, oldest first (ties by id).
func (c *Contents) Select(f Filter) []Record {
	var out []Record
	for i := range c.Records {
		if f.Keep(&c.Records[i]) {
			out = append(out, c.Records[i])
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// ParseSince reads --since: a duration back from now ("36h", "7d") or a
// date ("2026-01-31", or RFC 3339).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (36h, 7d) or a date (2026-01-31)", s)
}

// higherIsBetter are the metrics of which more is better; more of any
// other (latencies, failures, losses, CPU) is worse.
var higherIsBetter = map[string]bool{
	"publishRate": true, "consumeRate": true, "publishMBps": true, "consumeMBps": true,
	"maxRate": true, "sent": true, "acked": true, "consumed": true,
}

// Direction is which way of metric is good.
func Direction(metric string) changepoint.Direction {
	if higherIsBetter[metric] {
		return changepoint.HigherIsBetter
	}
	return changepoint.HigherIsWorse
}

// Metrics lists the metric names the records hold, sorted.
func Metrics(recs []Record) []string {
	seen := map[string]bool{}
	for _, r := range recs {
		for k := range r.Figures {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Series is the runs of one benchmark on the same number of nodes, oldest
// first.
type Series struct {
	Key     string
	Records []Record
}

// Title names the series: workload, broker, nodes and benchmark hash.
func (s *Series) Title() string {
	r := s.Records[0]
	nodes := "nodes unknown"
	if r.Env.Nodes > 0 {
		nodes = fmt.Sprintf("%d node(s)", r.Env.Nodes)
	}
	return fmt.Sprintf("%s on %s, %s (benchmark %s)", r.Workload, r.Broker, nodes, r.Benchmark)
}

// Values returns the series' values of metric and the records that have
// it.
func (s *Series) Values(metric string) ([]float64, []Record) {
	var vs []float64
	var rs []Record
	for _, r := range s.Records {
		if v, ok := r.Figures[metric]; ok {
			vs = append(vs, v)
			rs = append(rs, r)
		}
	}
	return vs, rs
}

// Group splits records (oldest first) into series, in the order of their
// first run. Reruns (IsRerun) are in no series.
func Group(recs []Record) []Series {
	var out []Series
	at := map[string]int{}
	for _, r := range recs {
		if IsRerun(&r) {
			continue
		}
		k := r.Series()
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Series{Key: k})
		}
		out[i].Records = append(out[i].Records, r)
	}
	return out
}

// Difference is a setting or a part of the environment that differs
// between two records.
type Difference struct {
	What, A, B string
}

// Diff lists what differs between a and b besides their figures: the
// broker and its version, node count, brokerbench's version and commit,
// the machine, the benchmark and the driver's settings.
func Diff(a, b *Record) []Difference {
	var out []Difference
	add := func(what, x, y string) {
		if x != y {
			out = append(out, Difference{what, x, y})
		}
	}
	add("broker", a.Broker, b.Broker)
	add("broker version", a.Env.BrokerVersion, b.Env.BrokerVersion)
	add("nodes", strconv.Itoa(a.Env.Nodes), strconv.Itoa(b.Env.Nodes))
	add("workload", a.Workload, b.Workload)
	add("benchmark", a.Benchmark, b.Benchmark)
	add("brokerbench version", a.Env.BrokerbenchVersion, b.Env.BrokerbenchVersion)
	add("brokerbench commit", a.Env.BrokerbenchCommit, b.Env.BrokerbenchCommit)
	add("go version", a.Env.GoVersion, b.Env.GoVersion)
	add("machine", a.Env.Hostname, b.Env.Hostname)
	add("cpu model", a.Env.CPUModel, b.Env.CPUModel)
	add("cpu cores", strconv.Itoa(a.Env.CPUCores), strconv.Itoa(b.Env.CPUCores))
	add("memory", strconv.FormatInt(a.Env.MemoryBytes, 10), strconv.FormatInt(b.Env.MemoryBytes, 10))
	add("kernel", a.Env.Kernel, b.Env.Kernel)
	add("os", a.Env.OS+"/"+a.Env.Arch, b.Env.OS+"/"+b.Env.Arch)
	keys := map[string]bool{}
	for k := range a.Settings {
		keys[k] = true
	}
	for k := range b.Settings {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, okA := a.Settings[k]
		y, okB := b.Settings[k]
		if !okA {
			x = "(unset)"
		}
		if !okB {
			y = "(unset)"
		}
		add("setting "+k, x, y)
	}
	return out
}

// OfBenchmark returns the records of the benchmark whose hash is id or
// starts with it, oldest first; an error when no benchmark or several
// match.
func (c *Contents) OfBenchmark(id string) ([]Record, error) {
	if id == "" {
		return nil, errors.New("no benchmark named: give its hash, as 'history trend' and 'history check' print it")
	}
	matched := map[string]bool{}
	var out []Record
	for _, r := range c.Select(Filter{}) {
		if strings.HasPrefix(r.Benchmark, id) {
			matched[r.Benchmark] = true
			out = append(out, r)
		}
	}
	switch len(matched) {
	case 0:
		return nil, fmt.Errorf("no run of a benchmark %q in the history ('history trend METRIC --workload W' prints each series' benchmark)", id)
	case 1:
		return out, nil
	}
	return nil, fmt.Errorf("%q names %d benchmarks (%s): give more of its characters", id, len(matched), strings.Join(slices.Sorted(maps.Keys(matched)), ", "))
}
