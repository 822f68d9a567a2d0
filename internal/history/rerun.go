package history

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/brokerbench/brokerbench/internal/changepoint"
)

// RerunLabel is the label of the records of runs made again to confirm a
// change point: rerun=<id of the run repeated>. Series leave them out
// (Group), so that a rerun never moves the series it checks.
const RerunLabel = "rerun"

// MaxReruns bounds the times each side of a change point is run again.
const MaxReruns = 10

// IsRerun reports whether r is the record of a rerun.
func IsRerun(r *Record) bool {
	_, ok := r.Labels[RerunLabel]
	return ok
}

// Pair is the last run before and the first run after the change points
// of one or more metrics at the same place of a series: made again,
// they confirm or dismiss each of Changes.
type Pair struct {
	Last, First Record
	Changes     []Change
}

// Pairs groups changes by the runs on either side of them, in the order
// of their first change.
func Pairs(changes []Change) []Pair {
	var out []Pair
	at := map[[2]string]int{}
	for _, ch := range changes {
		k := [2]string{ch.Last.ID, ch.First.ID}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Pair{Last: ch.Last, First: ch.First})
		}
		out[i].Changes = append(out[i].Changes, ch)
	}
	return out
}

// RunAgain makes the run rec recorded again, labelled rerun=rec.ID, and
// returns the new run's figures.
type RunAgain func(ctx context.Context, rec Record) (map[string]float64, error)

// Reran are the figures of a pair's reruns, in the order they were made
// on each side.
type Reran struct {
	Pair
	Before, After []map[string]float64
}

// Rerun makes the runs of p again, n times each, alternately: before,
// after, before, after... so that a drift of the machine over the reruns
// weighs on both sides alike. It stops at the first error.
func (p Pair) Rerun(ctx context.Context, n int, again RunAgain) (*Reran, error) {
	out := &Reran{Pair: p}
	for range n {
		f, err := again(ctx, p.Last)
		if err != nil {
			return out, fmt.Errorf("rerun of %s: %w", p.Last.ID, err)
		}
		out.Before = append(out.Before, f)
		if f, err = again(ctx, p.First); err != nil {
			return out, fmt.Errorf("rerun of %s: %w", p.First.ID, err)
		}
		out.After = append(out.After, f)
	}
	return out, nil
}

// Confirmation is what a pair's reruns say of one of its changes.
type Confirmation struct {
	Change
	// Before and After are the means of the metric over the reruns of
	// either side (NaN if no rerun gave the figure).
	Before, After float64
	// Confirmed says the reruns' means differ in the change's direction
	// by at least half its size.
	Confirmed bool
	// Reversed says the reruns' means differ the other way, by at least
	// the threshold: there is a change at this place, but the recorded
	// runs of one side were off (a machine disturbed while they ran), and
	// the reruns' direction is the one to believe. A change neither
	// confirmed nor reversed is dismissed.
	Reversed bool
}

// ShowsRegression reports whether the reruns show a regression of at
// least the threshold: a confirmed recorded regression (of at least the
// threshold), or a reversed recorded improvement (the reruns' shift, the
// other way, is then at least the threshold).
func (c Confirmation) ShowsRegression() bool {
	switch {
	case c.Confirmed:
		return c.Change.Regression
	case c.Reversed:
		return c.Effect == changepoint.Improvement
	}
	return false
}

// Judge says, for each of the pair's changes, whether the reruns confirm
// it, reverse it (threshold is the relative shift the other way that
// does) or dismiss it.
func (r *Reran) Judge(threshold float64) []Confirmation {
	var out []Confirmation
	for _, ch := range r.Changes {
		c := Confirmation{Change: ch, Before: meanOf(r.Before, ch.Metric), After: meanOf(r.After, ch.Metric)}
		recorded := ch.After.Mean - ch.Before.Mean
		c.Confirmed = Confirms(recorded, c.After-c.Before)
		c.Reversed = Reverses(recorded, c.Before, c.After, threshold)
		out = append(out, c)
	}
	return out
}

// Confirms reports whether a rerun shift confirms a recorded one: the
// same direction, and at least half its size.
func Confirms(recorded, rerun float64) bool {
	if recorded == 0 || math.IsNaN(rerun) {
		return false
	}
	return math.Signbit(recorded) == math.Signbit(rerun) && math.Abs(rerun) >= math.Abs(recorded)/2
}

// Reverses reports whether reruns whose means went from before to after
// show a change the other way than a recorded shift: the opposite
// direction, by at least threshold relative to before.
func Reverses(recorded, before, after, threshold float64) bool {
	rerun := after - before
	if recorded == 0 || rerun == 0 || before == 0 || math.IsNaN(rerun) {
		return false
	}
	return math.Signbit(recorded) != math.Signbit(rerun) && math.Abs(rerun)/math.Abs(before) >= threshold
}

// meanOf is the mean of metric over the figures that hold it; NaN if
// none does.
func meanOf(figs []map[string]float64, metric string) float64 {
	var vs []float64
	for _, f := range figs {
		if v, ok := f[metric]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	return mean(vs)
}

// ReportReruns prints what the reruns say of each change, with their
// figures, and returns an error wrapping ErrRegression if a regression
// beyond the threshold is confirmed.
func ReportReruns(w io.Writer, reran []*Reran, threshold float64) error {
	confirmed, reversed, dismissed, regressions := 0, 0, 0, 0
	for _, r := range reran {
		for _, c := range r.Judge(threshold) {
			tag := "DISMISSED"
			switch {
			case c.Confirmed:
				tag = "CONFIRMED"
				confirmed++
			case c.Reversed:
				tag = "REVERSED"
				reversed++
			default:
				dismissed++
			}
			if c.ShowsRegression() {
				regressions++
			}
			fmt.Fprintf(w, "%s: %s %s by %d rerun(s) of each side: %s -> %s (%s), recorded %s -> %s (%s)\n",
				c.Title, c.Metric, tag, len(r.Before), figure(c.Before), figure(c.After), relative(c.Before, c.After),
				figure(c.Change.Before.Mean), figure(c.Change.After.Mean), relative(c.Change.Before.Mean, c.Change.After.Mean))
			fmt.Fprintf(w, "  reruns of %s: %s\n", r.Last.ID, values(r.Before, c.Metric))
			fmt.Fprintf(w, "  reruns of %s: %s\n", r.First.ID, values(r.After, c.Metric))
			if c.Reversed {
				fmt.Fprintf(w, "  the reruns shift the other way by %.0f%% or more: the recorded runs of one side were off (a machine disturbed while they ran?); believe the reruns\n", 100*threshold)
			}
		}
		for _, d := range unrepeated(&r.Last, &r.First) {
			fmt.Fprintf(w, "  not repeated by the reruns, made by this brokerbench on this machine: %s %s -> %s\n", d.What, orNone(d.A), orNone(d.B))
		}
	}
	fmt.Fprintf(w, "%d change point(s) confirmed by reruns, %d reversed, %d dismissed; %d confirmed regression(s) beyond %.0f%%\n", confirmed, reversed, dismissed, regressions, 100*threshold)
	if regressions > 0 {
		return fmt.Errorf("%w: %d change point(s) worse by %.0f%% or more, confirmed by reruns", ErrRegression, regressions, 100*threshold)
	}
	return nil
}

// ranOn are the differences of Diff a rerun does not repeat: it is made
// by the brokerbench running it, on its machine.
var ranOn = map[string]bool{
	"brokerbench version": true, "brokerbench commit": true, "go version": true, "machine": true,
	"cpu model": true, "cpu cores": true, "memory": true, "kernel": true, "os": true,
}

// unrepeated lists what differs between a and b that their reruns do
// not repeat: a change there the reruns can neither confirm nor dismiss.
func unrepeated(a, b *Record) []Difference {
	var out []Difference
	for _, d := range Diff(a, b) {
		if ranOn[d.What] {
			out = append(out, d)
		}
	}
	return out
}

// relative is the change from a to b in percent, signed.
func relative(a, b float64) string {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*(b-a)/math.Abs(a))
}

// values lists metric of each figures, in order ("-" where absent).
func values(figs []map[string]float64, metric string) string {
	out := make([]string, len(figs))
	for i, f := range figs {
		out[i] = "-"
		if v, ok := f[metric]; ok {
			out[i] = figure(v)
		}
	}
	return strings.Join(out, " ")
}
