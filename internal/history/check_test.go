package history

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// series makes n records of the "quick" benchmark, an hour apart from
// start, whose publish p99 is level times a small deterministic noise;
// each record is passed to edit.
func series(start time.Time, from, n int, level float64, edit func(*Record)) []Record {
	noise := []float64{1, 1.01, 0.99, 1.02, 0.98, 1.005, 0.995, 1.015, 0.985, 1}
	var out []Record
	for i := from; i < from+n; i++ {
		r := testRecord(fmt.Sprintf("run-%02d", i), 1000*noise[(i+3)%len(noise)])
		r.Time = start.Add(time.Duration(i) * time.Hour)
		r.Figures["publish.p99"] = level * noise[i%len(noise)]
		if edit != nil {
			edit(&r)
		}
		out = append(out, r)
	}
	return out
}

var day = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestCheck(t *testing.T) {
	lingerUp := func(r *Record) { r.Settings = map[string]string{"producer/linger.ms": "50"} }
	newVersion := func(r *Record) { r.Env.BrokerVersion = "4.2.0" }
	disturbed := func(r *Record) { r.Verdict = "disturbed" }
	cases := []struct {
		name string
		recs []Record
		opts CheckOptions
		// want are lines the report holds; code is its error.
		want    []string
		wantErr error
	}{
		{
			// A setting that costs latency: one change point at run 10,
			// naming the setting, a regression beyond 5%.
			name: "setting",
			recs: append(series(day, 0, 10, 2, nil), series(day, 10, 10, 10, lingerUp)...),
			opts: CheckOptions{Metrics: []string{"publish.p99", "publishRate"}, Threshold: 0.05},
			want: []string{
				"quick on kafka, 1 node(s) (benchmark b1): publish.p99 REGRESSION +400.0% (2 -> 10, mean of 10 runs -> 10 runs), confidence 99.5%",
				"  from run run-10 (2026-03-01 10:00), after run run-09 (2026-03-01 09:00)",
				"  changed: setting producer/linger.ms 5 -> 50",
				"1 series checked, 1 change point(s), 1 regression(s) beyond 5%",
			},
			wantErr: ErrRegression,
		},
		{
			// An improvement (lower latency with a new broker version) is
			// reported and passes.
			name: "improvement",
			recs: append(series(day, 0, 10, 10, nil), series(day, 10, 10, 2, newVersion)...),
			opts: CheckOptions{Metrics: []string{"publish.p99"}, Threshold: 0.05},
			want: []string{"publish.p99 improvement -80.0%", "  changed: broker version 4.1.0 -> 4.2.0", "0 regression(s)"},
		},
		{
			// A regression under the threshold is reported, and passes.
			name: "below threshold",
			recs: append(series(day, 0, 10, 10, nil), series(day, 10, 10, 10.5, nil)...),
			opts: CheckOptions{Metrics: []string{"publish.p99"}, Threshold: 0.10},
			want: []string{"publish.p99 regression +5.0%", "nothing recorded changed between these runs", "1 change point(s), 0 regression(s) beyond 10%"},
		},
		{
			// Disturbed runs are left out: the series is then too short.
			name: "disturbed left out",
			recs: append(series(day, 0, 6, 2, nil), series(day, 6, 10, 10, disturbed)...),
			opts: CheckOptions{Metrics: []string{"publish.p99"}, Threshold: 0.05},
			want: []string{"too few runs for a change point (at least 10): quick on kafka, 1 node(s) (benchmark b1): 6 runs", "1 series checked, 0 change point(s)"},
		},
		{
			// ... unless asked for.
			name:    "all runs",
			recs:    append(series(day, 0, 6, 2, nil), series(day, 6, 10, 10, disturbed)...),
			opts:    CheckOptions{Metrics: []string{"publish.p99"}, Threshold: 0.05, AllRuns: true},
			want:    []string{"publish.p99 REGRESSION +399.6% (2.002 -> 10, mean of 6 runs -> 10 runs)"},
			wantErr: ErrRegression,
		},
		{
			// The setting changed a run before the latency rose (a change
			// point may be placed a run off): the nearest change is named,
			// and where.
			name:    "nearest change",
			recs:    append(append(series(day, 0, 9, 2, nil), series(day, 9, 1, 2, lingerUp)...), series(day, 10, 10, 10, lingerUp)...),
			opts:    CheckOptions{Metrics: []string{"publish.p99"}, Threshold: 0.05},
			want:    []string{"  from run run-10", "  changed 1 run(s) before the change point: setting producer/linger.ms 5 -> 50"},
			wantErr: ErrRegression,
		},
		{
			// A flat series has no change point.
			name: "flat",
			recs: series(day, 0, 20, 2, nil),
			want: []string{"1 series checked, 0 change point(s), 0 regression(s) beyond 0%"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := Check(tc.recs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			err = checked.Report(&b, tc.opts.Threshold)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("Report = %v, want %v", err, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestSelect(t *testing.T) {
	recs := series(day, 0, 4, 2, nil)
	recs[1].Workload, recs[2].Env.BrokerVersion, recs[3].Labels = "other", "Apache Kafka 3.9.0", map[string]string{"ci": "nightly"}
	recs[0], recs[3] = recs[3], recs[0] // Select orders by time
	c := &Contents{Records: recs}
	cases := []struct {
		name string
		f    Filter
		want string
	}{
		{"all, oldest first", Filter{}, "run-00 run-01 run-02 run-03"},
		{"workload", Filter{Workload: "quick"}, "run-00 run-02 run-03"},
		{"version prefix", Filter{Version: "4.1"}, "run-00 run-01 run-03"},
		{"release of a named product", Filter{Version: "3.9"}, "run-02"},
		{"product and release", Filter{Version: "Apache Kafka 3"}, "run-02"},
		{"since", Filter{Since: day.Add(2 * time.Hour)}, "run-02 run-03"},
		{"label", Filter{Labels: map[string]string{"ci": "nightly"}}, "run-03"},
		{"broker", Filter{Broker: "rabbitmq"}, ""},
	}
	for _, tc := range cases {
		var ids []string
		for _, r := range c.Select(tc.f) {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := day
	for in, want := range map[string]time.Time{
		"7d": now.AddDate(0, 0, -7), "36h": now.Add(-36 * time.Hour), "2026-01-31": time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), "": {},
	} {
		if got, err := ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "-1h"} {
		if _, err := ParseSince(bad, now); err == nil {
			t.Errorf("ParseSince(%q) took it", bad)
		}
	}
}
