package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// column is one table column: its header and how to read a run's value.
// Numeric columns are aggregated over a group's iterations as the median
// with the range.
type column struct {
	id, header string
	text       func(r *results.Run) string  // for text columns
	num        func(r *results.Run) float64 // for numeric columns (NaN: none)
	digits     int                          // decimals shown
}

func latencyCol(id, header string, pick func(m results.Aggregate) metrics.Latency, q func(l metrics.Latency) float64) column {
	return column{id: id, header: header, digits: 2, num: func(r *results.Run) float64 {
		l := pick(r.Measured)
		if l.Count == 0 {
			return math.NaN()
		}
		return q(l)
	}}
}

// sysCol reads the measurement phase's mean resource use.
func sysCol(id, header string, f func(s *results.System) float64) column {
	return column{id: id, header: header, digits: 1, num: func(r *results.Run) float64 {
		if r.Measured.System == nil {
			return math.NaN()
		}
		return f(r.Measured.System)
	}}
}

// txCol reads a figure of a run's transactions from its counts, whose
// Transactions f may take as set; none for a run without transactions.
func txCol(id, header string, digits int, f func(c results.Counts) float64) column {
	return column{id: id, header: header, digits: digits, num: func(r *results.Run) float64 {
		if r.Counts.Transactions == nil {
			return math.NaN()
		}
		return f(r.Counts)
	}}
}

// commit is the measured commit latency; empty for a run without
// transactions.
func commit(m results.Aggregate) metrics.Latency {
	if m.CommitLatency == nil {
		return metrics.Latency{}
	}
	return *m.CommitLatency
}

func pub(m results.Aggregate) metrics.Latency { return m.PublishLatency }
func e2e(m results.Aggregate) metrics.Latency { return m.EndToEndLatency }

// columns are every column a study can ask for, by id.
var columns = func() map[string]column {
	cols := []column{
		{id: "workload", header: "Workload", text: func(r *results.Run) string { return r.Workload.Name }},
		{id: "setup", header: "Setup", text: func(r *results.Run) string {
			if r.Study != nil {
				return r.Study.Setup
			}
			return r.Driver.Name
		}},
		{id: "brokerVersion", header: "Broker", text: func(r *results.Run) string { return r.Environment.BrokerVersion }},
		{id: "iteration", header: "Iteration", text: func(r *results.Run) string { return strconv.Itoa(iteration(r)) }},
		{id: "brokers", header: "Brokers", num: func(r *results.Run) float64 {
			if r.Study != nil {
				return float64(r.Study.Brokers)
			}
			return 1
		}},
		{id: "producers", header: "Producers", num: func(r *results.Run) float64 { return float64(r.Workload.Producers()) }},
		{id: "consumers", header: "Consumers", num: func(r *results.Run) float64 { return float64(r.Workload.Consumers()) }},
		{id: "partitions", header: "Partitions", num: func(r *results.Run) float64 { return float64(r.Workload.Topics * r.Workload.PartitionsPerTopic) }},
		{id: "messageSize", header: "Message size (bytes)", num: func(r *results.Run) float64 { return float64(r.Workload.MessageSize) }},
		{id: "replicationFactor", header: "Replication", num: func(r *results.Run) float64 { return float64(r.Driver.ReplicationFactor) }},
		{id: "security", header: "Security", text: func(r *results.Run) string {
			c := r.Driver.Effective["client"].Map()
			return strings.TrimSpace(c["security.protocol"].Value + " " + c["sasl.mechanism"].Value)
		}},
		{id: "acks", header: "acks", text: func(r *results.Run) string { return r.Driver.Effective["producer"].Map()["acks"].Value }},
		{id: "publishRate", header: "Throughput (msgs/s)", num: func(r *results.Run) float64 { return r.Measured.PublishRate }},
		{id: "publishMBps", header: "Throughput (MB/s)", digits: 2, num: func(r *results.Run) float64 { return r.Measured.PublishMBps }},
		{id: "consumeRate", header: "Consumed (msgs/s)", num: func(r *results.Run) float64 { return r.Measured.ConsumeRate }},
		{id: "consumeMBps", header: "Consumed (MB/s)", digits: 2, num: func(r *results.Run) float64 { return r.Measured.ConsumeMBps }},
		{id: "drainRate", header: "Drain (msgs/s)", num: func(r *results.Run) float64 {
			if r.Backlog == nil {
				return math.NaN()
			}
			return r.Backlog.DrainRate
		}},
		latencyCol("publishP50", "Publish p50 (ms)", pub, func(l metrics.Latency) float64 { return l.P50 }),
		latencyCol("publishP95", "Publish p95 (ms)", pub, func(l metrics.Latency) float64 { return l.P95 }),
		latencyCol("publishP99", "Publish p99 (ms)", pub, func(l metrics.Latency) float64 { return l.P99 }),
		latencyCol("publishP999", "Publish p99.9 (ms)", pub, func(l metrics.Latency) float64 { return l.P999 }),
		latencyCol("publishMax", "Publish max (ms)", pub, func(l metrics.Latency) float64 { return l.Max }),
		latencyCol("e2eMean", "E2E mean (ms)", e2e, func(l metrics.Latency) float64 { return l.Mean }),
		latencyCol("e2eP50", "E2E p50 (ms)", e2e, func(l metrics.Latency) float64 { return l.P50 }),
		latencyCol("e2eP95", "E2E p95 (ms)", e2e, func(l metrics.Latency) float64 { return l.P95 }),
		latencyCol("e2eP99", "E2E p99 (ms)", e2e, func(l metrics.Latency) float64 { return l.P99 }),
		latencyCol("e2eP999", "E2E p99.9 (ms)", e2e, func(l metrics.Latency) float64 { return l.P999 }),
		latencyCol("e2eMax", "E2E max (ms)", e2e, func(l metrics.Latency) float64 { return l.Max }),
		{id: "sendLagP99", header: "Send lag p99 (ms)", digits: 3, num: func(r *results.Run) float64 { return r.Measured.SendLag.P99 }},
		latencyCol("commitP50", "Commit p50 (ms)", commit, func(l metrics.Latency) float64 { return l.P50 }),
		latencyCol("commitP99", "Commit p99 (ms)", commit, func(l metrics.Latency) float64 { return l.P99 }),
		txCol("committed", "Transactions committed", 0, func(c results.Counts) float64 { return float64(c.Transactions.Committed) }),
		txCol("aborted", "Transactions aborted", 0, func(c results.Counts) float64 { return float64(c.Transactions.Aborted) }),
		txCol("abortRate", "Abort rate", 3, func(c results.Counts) float64 { return c.Transactions.AbortRate() }),
		txCol("abortedRead", "Aborted messages read", 0, func(c results.Counts) float64 { return float64(c.AbortedRead) }),
		{id: "lost", header: "Lost", num: func(r *results.Run) float64 { return float64(r.Counts.Lost) }},
		{id: "duplicated", header: "Duplicated", num: func(r *results.Run) float64 { return float64(r.Counts.Duplicated) }},
		{id: "costPerBillion", header: "Cost per billion msgs", digits: 2, num: costPerBillion},
		sysCol("cpuUser", "CPU user (%)", func(s *results.System) float64 { return s.CPUUser }),
		sysCol("cpuSystem", "CPU system (%)", func(s *results.System) float64 { return s.CPUSystem }),
		sysCol("cpuIowait", "CPU iowait (%)", func(s *results.System) float64 { return s.CPUIowait }),
		sysCol("clientCPU", "brokerbench CPU (% of a core)", func(s *results.System) float64 { return s.ClientCPU }),
		sysCol("brokerCPU", "Broker CPU (% of a core)", func(s *results.System) float64 {
			if !s.BrokerSampled {
				return math.NaN()
			}
			return s.BrokerCPU
		}),
		sysCol("linkProxyCPU", "Link proxy CPU (% of a core)", func(s *results.System) float64 {
			if s.LinkProxyCPU == 0 {
				return math.NaN()
			}
			return s.LinkProxyCPU
		}),
		sysCol("diskWriteMBps", "Disk writes (MB/s)", func(s *results.System) float64 { return s.DiskWriteMBps }),
	}
	m := map[string]column{}
	for _, c := range cols {
		m[c.id] = c
	}
	return m
}()

// ColumnIDs lists the columns a study may name, sorted.
func ColumnIDs() []string {
	ids := make([]string, 0, len(columns))
	for id := range columns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// costPerBillion is the cost of a billion messages at the measured publish
// rate.
func costPerBillion(r *results.Run) float64 {
	if r.Price == nil || r.Price.PerHour() <= 0 || r.Measured.PublishRate <= 0 {
		return math.NaN()
	}
	return r.Price.PerBillion(r.Measured.PublishRate)
}

// Table is a rendered table: a header row and text cells, with the numbers
// behind numeric cells for CSV.
type Table struct {
	Title   string
	Headers []string
	Rows    [][]string
	// CSV holds the rows for CSV export: numbers unformatted, and for
	// numeric columns over several iterations, the min and max as well.
	CSVHeaders []string
	CSV        [][]string
}

// summaryColumns chooses the summary table's columns.
func (in *Input) summaryColumns() ([]column, error) {
	ids := in.Columns
	if len(ids) == 0 {
		ids = []string{"workload", "setup"}
		ids = append(ids, in.sweptParams()...)
		ids = append(ids, "publishRate", "publishMBps", "consumeRate", "publishP50", "publishP99", "e2eP50", "e2eP99", "lost")
		for _, g := range in.Groups {
			if !math.IsNaN(costPerBillion(g.first())) {
				ids = append(ids, "costPerBillion")
				break
			}
		}
	}
	var cols []column
	for _, id := range ids {
		if id == "configuration" {
			// Filled from the group's label by SummaryTable.
			cols = append(cols, column{id: id, header: "Configuration", text: func(*results.Run) string { return "" }})
			continue
		}
		c, ok := columns[id]
		if !ok && slices.Contains(in.sweptParams(), id) {
			name := id
			c = column{id: id, header: id, text: func(r *results.Run) string { return param(r, name) }}
			ok = true
		}
		if !ok {
			return nil, fmt.Errorf("unknown report column %q; known: %s, or a swept parameter", id, strings.Join(ColumnIDs(), ", "))
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// SummaryTable has a row per configuration, or per run if the columns
// include "iteration". Numeric cells of several iterations show the median
// and, in brackets, the range.
func (in *Input) SummaryTable() (*Table, error) {
	cols, err := in.summaryColumns()
	if err != nil {
		return nil, err
	}
	perRun := slices.ContainsFunc(cols, func(c column) bool { return c.id == "iteration" })
	t := &Table{Title: "Summary"}
	multi := false
	for _, g := range in.Groups {
		multi = multi || (!perRun && len(g.Runs) > 1)
	}
	for _, c := range cols {
		t.Headers = append(t.Headers, c.header)
		t.CSVHeaders = append(t.CSVHeaders, c.id)
		if multi && c.num != nil {
			t.CSVHeaders = append(t.CSVHeaders, c.id+"_min", c.id+"_max")
		}
	}
	type rowRuns struct {
		label string
		runs  []*results.Run
	}
	var rowsOf []rowRuns
	for _, g := range in.Groups {
		if perRun {
			for _, r := range g.Runs {
				rowsOf = append(rowsOf, rowRuns{g.Label, []*results.Run{r}})
			}
		} else {
			rowsOf = append(rowsOf, rowRuns{g.Label, g.Runs})
		}
	}
	for _, rr := range rowsOf {
		runs := rr.runs
		var row, csvRow []string
		for _, c := range cols {
			if c.text != nil {
				v := c.text(runs[0])
				if c.id == "configuration" {
					v = rr.label
				}
				row = append(row, v)
				csvRow = append(csvRow, v)
				continue
			}
			var vals []float64
			for _, r := range runs {
				if v := c.num(r); !math.IsNaN(v) {
					vals = append(vals, v)
				}
			}
			med, lo, hi := spread(vals)
			cell := formatNum(med, c.digits)
			if len(vals) > 1 && lo != hi {
				cell += " (" + formatNum(lo, c.digits) + "–" + formatNum(hi, c.digits) + ")"
			}
			row = append(row, cell)
			csvRow = append(csvRow, csvNum(med))
			if multi {
				csvRow = append(csvRow, csvNum(lo), csvNum(hi))
			}
		}
		t.Rows = append(t.Rows, row)
		t.CSV = append(t.CSV, csvRow)
	}
	return t, nil
}

// spread returns the median, minimum and maximum; NaN for no values.
func spread(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}

// formatNum prints v with thousands separators and the given decimals; "–"
// for no value.
func formatNum(v float64, digits int) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', digits, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

func csvNum(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteMarkdown writes t as a GitHub-flavoured Markdown table.
func (t *Table) WriteMarkdown(w io.Writer) error {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| " + strings.Join(mapStrings(t.Headers, esc), " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(t.Headers)) + "\n")
	for _, row := range t.Rows {
		b.WriteString("| " + strings.Join(mapStrings(row, esc), " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes t's CSV form: one header row of column ids, then numbers
// unformatted.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.CSVHeaders); err != nil {
		return err
	}
	if err := cw.WriteAll(t.CSV); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}
