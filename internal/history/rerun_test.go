package history

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// checkedSetting is the check of a series whose publish p99 went from 2
// to 10 at run-10 (a setting that costs latency), searching the p99 and
// the publish rate.
func checkedSetting(t *testing.T) *Checked {
	t.Helper()
	return checkedShift(t, 2, 10)
}

// checkedShift is the check of a series whose publish p99 went from
// before to after at run-10, when a setting changed.
func checkedShift(t *testing.T, before, after float64) *Checked {
	t.Helper()
	lingerUp := func(r *Record) { r.Settings = map[string]string{"producer/linger.ms": "50"} }
	c, err := Check(append(series(day, 0, 10, before, nil), series(day, 10, 10, after, lingerUp)...),
		CheckOptions{Metrics: []string{"publish.p99", "publishRate"}, Threshold: 0.05})
	if err != nil || len(c.Changes) != 1 {
		t.Fatalf("check: %v, %+v", err, c)
	}
	return c
}

// fakeRuns makes each run again as figures[id] says, in turn, and
// remembers the order of the runs it made.
type fakeRuns struct {
	figures map[string][]float64
	made    []string
}

func (f *fakeRuns) again(_ context.Context, rec Record) (map[string]float64, error) {
	f.made = append(f.made, rec.ID)
	vs := f.figures[rec.ID]
	if len(vs) == 0 {
		return nil, errors.New("broker unreachable")
	}
	v := vs[0]
	f.figures[rec.ID] = vs[1:]
	return map[string]float64{"publish.p99": v}, nil
}

func TestRerunConfirmsOrDismisses(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []float64
		// confirmed is the verdict; code the report's error.
		confirmed bool
		wantErr   error
		want      string
	}{
		{
			// The reruns shift as the recorded runs did: confirmed, and a
			// regression beyond the threshold.
			name: "confirmed", before: []float64{2, 2.2}, after: []float64{10, 9.8},
			confirmed: true, wantErr: ErrRegression,
			want: "publish.p99 CONFIRMED by 2 rerun(s) of each side: 2.1 -> 9.9 (+371.4%), recorded 2 -> 10 (+400.0%)",
		},
		{
			// Half the recorded shift (4 of 8) is enough.
			name: "half", before: []float64{2, 2}, after: []float64{6, 6}, confirmed: true, wantErr: ErrRegression,
			want: "CONFIRMED",
		},
		{
			// Less than half is noise the recorded runs happened to show.
			name: "less than half", before: []float64{2, 2}, after: []float64{5.9, 5.9},
			want: "publish.p99 DISMISSED by 2 rerun(s) of each side: 2 -> 5.9 (+195.0%)",
		},
		{
			// A shift the other way, beyond the threshold, reverses the
			// change: an improvement here, so no regression.
			name: "opposite", before: []float64{10, 10}, after: []float64{2, 2},
			want: "publish.p99 REVERSED by 2 rerun(s) of each side: 10 -> 2 (-80.0%)",
		},
		{
			// A shift the other way within the threshold is noise.
			name: "opposite within the threshold", before: []float64{10, 10}, after: []float64{9.8, 9.8},
			want: "DISMISSED",
		},
		{
			// No shift at all.
			name: "level", before: []float64{3, 3}, after: []float64{3, 3},
			want: "DISMISSED",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkedSetting(t)
			pairs := Pairs(c.Changes)
			runs := &fakeRuns{figures: map[string][]float64{"run-09": tc.before, "run-10": tc.after}}
			reran, err := pairs[0].Rerun(context.Background(), 2, runs.again)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(runs.made, " "); got != "run-09 run-10 run-09 run-10" {
				t.Errorf("runs made in the order %s, want before and after alternately", got)
			}
			judged := reran.Judge(0.05)
			if len(judged) != 1 || judged[0].Confirmed != tc.confirmed {
				t.Errorf("judged %+v, want confirmed %v", judged, tc.confirmed)
			}
			var out strings.Builder
			err = ReportReruns(&out, []*Reran{reran}, 0.05)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("report: %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, out.String())
			}
		})
	}
}

// TestRerunsReverseAnImprovement: an improvement recorded because the
// runs before it were slowed (a disturbed machine) is a regression by
// its reruns: reported REVERSED, counted as a confirmed regression.
func TestRerunsReverseAnImprovement(t *testing.T) {
	c := checkedShift(t, 50, 10)
	if ch := c.Changes[0]; ch.Regression {
		t.Fatalf("recorded %+v, want an improvement", ch)
	}
	runs := &fakeRuns{figures: map[string][]float64{"run-09": {3, 2.6}, "run-10": {11.6, 11.8}}}
	reran, err := Pairs(c.Changes)[0].Rerun(context.Background(), 2, runs.again)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = ReportReruns(&out, []*Reran{reran}, 0.05)
	if !errors.Is(err, ErrRegression) {
		t.Errorf("report: %v, want a regression", err)
	}
	for _, want := range []string{
		"publish.p99 REVERSED by 2 rerun(s) of each side: 2.8 -> 11.7 (+317.9%), recorded 50 -> 10 (-80.0%)\n",
		"  the reruns shift the other way by 5% or more: the recorded runs of one side were off",
		"0 change point(s) confirmed by reruns, 1 reversed, 0 dismissed; 1 confirmed regression(s) beyond 5%\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReverses(t *testing.T) {
	for _, tc := range []struct {
		recorded, before, after float64
		want                    bool
	}{
		{-40, 2.8, 11.7, true},     // recorded down, reruns up 318%
		{8, 10, 2, true},           // recorded up, reruns down 80%
		{8, 10, 9.6, false},        // down 4%: within 5%
		{8, 2, 10, false},          // the same direction
		{8, 0, 1, false},           // no relative size
		{0, 2, 10, false},          // nothing recorded
		{-8, 2, math.NaN(), false}, // no rerun figure
	} {
		if got := Reverses(tc.recorded, tc.before, tc.after, 0.05); got != tc.want {
			t.Errorf("Reverses(%v, %v, %v) = %v, want %v", tc.recorded, tc.before, tc.after, got, tc.want)
		}
	}
}

// TestRerunsSayWhatTheyDoNotRepeat: a change of brokerbench between the
// two sides is not repeated by reruns, all made by one brokerbench: the
// report says so.
func TestRerunsSayWhatTheyDoNotRepeat(t *testing.T) {
	c := checkedSetting(t)
	p := Pairs(c.Changes)[0]
	p.First.Env.BrokerbenchCommit = "abc123"
	runs := &fakeRuns{figures: map[string][]float64{"run-09": {2}, "run-10": {2}}}
	reran, err := p.Rerun(context.Background(), 1, runs.again)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	_ = ReportReruns(&out, []*Reran{reran}, 0.05)
	want := "  not repeated by the reruns, made by this brokerbench on this machine: brokerbench commit (none) -> abc123\n"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "linger.ms") {
		t.Errorf("report lacks %q, or names the setting the reruns repeat:\n%s", want, out.String())
	}
}

// TestRerunStopsAtAnError: a rerun that fails ends the pair's reruns with
// an error naming the run.
func TestRerunStopsAtAnError(t *testing.T) {
	c := checkedSetting(t)
	runs := &fakeRuns{figures: map[string][]float64{"run-09": {2, 2}, "run-10": {10}}}
	_, err := Pairs(c.Changes)[0].Rerun(context.Background(), 2, runs.again)
	if err == nil || !strings.Contains(err.Error(), "rerun of run-10: broker unreachable") {
		t.Errorf("error %v, want the second rerun of run-10's", err)
	}
	if got := strings.Join(runs.made, " "); got != "run-09 run-10 run-09 run-10" {
		t.Errorf("runs made: %s", got)
	}
}

func TestPairsGroupChangesAtTheSamePlace(t *testing.T) {
	a, b, d := Record{ID: "a"}, Record{ID: "b"}, Record{ID: "d"}
	changes := []Change{
		{Metric: "publish.p99", Last: a, First: b},
		{Metric: "e2e.p99", Last: b, First: d},
		{Metric: "e2e.p50", Last: a, First: b},
	}
	pairs := Pairs(changes)
	if len(pairs) != 2 || pairs[0].First.ID != "b" || len(pairs[0].Changes) != 2 || pairs[1].First.ID != "d" || len(pairs[1].Changes) != 1 {
		t.Errorf("pairs %+v, want (a,b) with two changes, then (b,d)", pairs)
	}
}

func TestConfirms(t *testing.T) {
	for _, tc := range []struct {
		recorded, rerun float64
		want            bool
	}{
		{8, 4, true},           // half, the same way
		{8, 3.9, false},        // less than half
		{-8, -12, true},        // larger, the same way
		{-8, 8, false},         // the other way
		{0, 1, false},          // no recorded shift confirms nothing
		{8, math.NaN(), false}, // reruns without the figure
		{-0.5, -0.25, true},    // small figures as large ones
	} {
		if got := Confirms(tc.recorded, tc.rerun); got != tc.want {
			t.Errorf("Confirms(%v, %v) = %v, want %v", tc.recorded, tc.rerun, got, tc.want)
		}
	}
}

// TestRerunsAreInNoSeries: the records of reruns do not join the series
// of the runs they repeat.
func TestRerunsAreInNoSeries(t *testing.T) {
	recs := series(day, 0, 3, 2, nil)
	rerun := testRecord("rerun-1", 1000)
	rerun.Labels = map[string]string{RerunLabel: "run-01"}
	g := Group(append(recs, rerun))
	if len(g) != 1 || len(g[0].Records) != 3 {
		t.Errorf("series %+v, want the 3 recorded runs alone", g)
	}
}
