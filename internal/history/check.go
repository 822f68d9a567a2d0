package history

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/brokerbench/brokerbench/internal/changepoint"
)

// ErrRegression is returned, wrapped, by Report when a check found a
// regression beyond its threshold.
var ErrRegression = errors.New("regression found")

// DefaultCheckMetrics are the metrics Check searches when given none.
var DefaultCheckMetrics = []string{"publishRate", "consumeRate", "publish.p50", "publish.p99", "e2e.p50", "e2e.p99"}

// DefaultThreshold is the smallest relative shift of a regression that
// fails a check: 5%.
const DefaultThreshold = 0.05

// untrusted are the verdicts of runs whose figures describe something
// other than the broker, left out of every series Check searches.
var untrusted = map[string]bool{"interrupted": true, "failed": true, "disturbed": true, "load-generator-bound": true}

// CheckOptions tune a check.
type CheckOptions struct {
	// Metrics are searched; none: DefaultCheckMetrics.
	Metrics []string
	// Threshold is the smallest relative shift of a regression that counts
	// as one (0.05: 5%).
	Threshold float64
	// AllRuns keeps the runs whose verdict says their figures describe
	// something other than the broker (a shared CI machine's runs are
	// often disturbed).
	AllRuns bool
	// Detect tunes the change point search; its Direction is the
	// metric's.
	Detect changepoint.Options
}

// Change is a change point in one metric of one series.
type Change struct {
	Series string
	Title  string
	Metric string
	changepoint.ChangePoint
	// Last is the last run before the change, First the first after it.
	Last, First Record
	// Changed is what differs between Last and First besides figures.
	// When nothing does, it is the nearest change between two runs in a
	// row within the segments on either side (a change point may be
	// placed a run or two off), and Offset says where: the runs
	// series[Index+Offset-1] and series[Index+Offset].
	Changed []Difference
	Offset  int
	// Regression is a regression of at least the threshold.
	Regression bool
}

// Checked is the outcome of a check.
type Checked struct {
	Changes []Change
	// Series counts the series searched; Short names those too short to
	// hold a change point yet.
	Series int
	Short  []string
}

// Trusted returns the records whose verdict does not say their figures
// describe something other than the broker (interrupted, failed,
// disturbed, load-generator-bound).
func Trusted(recs []Record) []Record {
	var out []Record
	for _, r := range recs {
		if !untrusted[r.Verdict] {
			out = append(out, r)
		}
	}
	return out
}

// Check searches each series of recs (oldest first) for the runs at which
// a metric changed level. Runs whose verdict says their figures describe
// something else than the broker (interrupted, failed, disturbed,
// load-generator-bound) are left out unless o.AllRuns.
func Check(recs []Record, o CheckOptions) (*Checked, error) {
	metrics := o.Metrics
	if len(metrics) == 0 {
		metrics = DefaultCheckMetrics
	}
	trusted := recs
	if !o.AllRuns {
		trusted = Trusted(recs)
	}
	out := &Checked{}
	for _, s := range Group(trusted) {
		out.Series++
		short := true
		for _, m := range metrics {
			values, runs := s.Values(m)
			opts := o.Detect
			opts.Direction = Direction(m)
			cps, err := changepoint.Detect(values, opts)
			if errors.Is(err, changepoint.ErrTooShort) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", s.Title(), m, err)
			}
			short = false
			for _, cp := range cps {
				ch := Change{
					Series: s.Key, Title: s.Title(), Metric: m, ChangePoint: cp,
					Last: runs[cp.Index-1], First: runs[cp.Index],
					Regression: cp.Effect == changepoint.Regression && math.Abs(cp.RelativeShift) >= o.Threshold,
				}
				ch.Changed, ch.Offset = explain(runs, cp)
				out.Changes = append(out.Changes, ch)
			}
		}
		if short {
			out.Short = append(out.Short, fmt.Sprintf("%s: %d runs", s.Title(), len(s.Records)))
		}
	}
	return out, nil
}

// explain returns what changed between the runs on either side of cp or,
// if nothing did, the nearest change between two runs in a row within the
// segments around it, and its offset from cp.Index.
func explain(runs []Record, cp changepoint.ChangePoint) ([]Difference, int) {
	for d := 0; d < cp.After.End-cp.Before.Start; d++ {
		for _, i := range []int{cp.Index - d, cp.Index + d} {
			if i <= cp.Before.Start || i >= cp.After.End {
				continue
			}
			if diffs := Diff(&runs[i-1], &runs[i]); len(diffs) > 0 {
				return diffs, i - cp.Index
			}
		}
	}
	return nil, 0
}

// Report prints the check's change points, each with its size, its
// confidence and what changed between the runs on either side, and
// returns an error wrapping ErrRegression if one is a regression beyond
// the threshold.
func (c *Checked) Report(w io.Writer, threshold float64) error {
	regressions := 0
	for _, ch := range c.Changes {
		if ch.Regression {
			regressions++
		}
		fmt.Fprintf(w, "%s: %s %s\n", ch.Title, ch.Metric, ch.Shift())
		for _, line := range ch.Explanation() {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	for _, s := range c.Short {
		fmt.Fprintf(w, "too few runs for a change point (at least %d): %s\n", 2*changepoint.DefaultMinSegment, s)
	}
	fmt.Fprintf(w, "%d series checked, %d change point(s), %d regression(s) beyond %.0f%%\n", c.Series, len(c.Changes), regressions, 100*threshold)
	if regressions > 0 {
		return fmt.Errorf("%w: %d change point(s) worse by %.0f%% or more", ErrRegression, regressions, 100*threshold)
	}
	return nil
}

// Tag is REGRESSION for a regression beyond the threshold, else the
// change's effect ("regression", "improvement").
func (ch *Change) Tag() string {
	if ch.Regression {
		return "REGRESSION"
	}
	return ch.Effect.String()
}

// Shift says how the metric changed: "REGRESSION +12.0% (10 -> 11.2,
// mean of 6 runs -> 5 runs), confidence 99.5%".
func (ch *Change) Shift() string {
	return fmt.Sprintf("%s %+.1f%% (%s -> %s, mean of %d runs -> %d runs), confidence %.1f%%",
		ch.Tag(), 100*ch.RelativeShift, figure(ch.Before.Mean), figure(ch.After.Mean),
		ch.Before.End-ch.Before.Start, ch.After.End-ch.After.Start, 100*ch.Confidence())
}

// Explanation says between which runs the change is and what changed
// there, a line each.
func (ch *Change) Explanation() []string {
	lines := []string{fmt.Sprintf("from run %s (%s), after run %s (%s)", ch.First.ID, ch.First.Time.Format("2006-01-02 15:04"), ch.Last.ID, ch.Last.Time.Format("2006-01-02 15:04"))}
	if len(ch.Changed) == 0 {
		lines = append(lines, "nothing recorded changed between these runs: the broker, the machine or the network changed unseen, or it is noise")
	}
	where := ""
	switch {
	case ch.Offset < 0:
		where = fmt.Sprintf(" %d run(s) before the change point", -ch.Offset)
	case ch.Offset > 0:
		where = fmt.Sprintf(" %d run(s) after the change point", ch.Offset)
	}
	for _, d := range ch.Changed {
		lines = append(lines, fmt.Sprintf("changed%s: %s %s -> %s", where, d.What, orNone(d.A), orNone(d.B)))
	}
	return lines
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

// figure formats a value with 4 significant digits.
func figure(v float64) string { return fmt.Sprintf("%.4g", v) }
