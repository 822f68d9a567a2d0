package history

import (
	"io"
	"strings"
	"testing"
)

func TestPrint(t *testing.T) {
	recs := series(day, 0, 3, 2, nil)
	recs[2].Figures["publish.p99"] = 8
	recs[2].Env.BrokerVersion = "4.2.0"
	recs[2].Settings = map[string]string{"producer/linger.ms": "50", "producer/acks": "all"}
	recs[1].Labels = map[string]string{"ci": "nightly", "pr": "12"}
	cases := []struct {
		name  string
		print func(w io.Writer)
		// want are the lines (or their starts) printed, in order.
		want []string
	}{
		{
			name:  "list",
			print: func(w io.Writer) { PrintList(w, recs) },
			want: []string{
				"ID      TIME              WORKLOAD  BROKER  VERSION  NODES  PUBLISH/S  PUB P99 MS  E2E P99 MS  VERDICT  LABELS",
				"run-00  2026-03-01 00:00  quick     kafka   4.1.0    1      1020       2           -           ok",
				"run-01  2026-03-01 01:00  quick     kafka   4.1.0    1      980        2.02        -           ok       ci=nightly,pr=12",
				"run-02  2026-03-01 02:00  quick     kafka   4.2.0    1      1005       8           -           ok",
				"3 run(s)",
			},
		},
		{
			name:  "show",
			print: func(w io.Writer) { PrintRecord(w, &recs[2]) },
			want: []string{
				"id:        run-02", "time:      2026-03-01 02:00:00 UTC", "origin:    brokerbench", "workload:  quick",
				"broker:    kafka 4.2.0, 1 node(s)", "benchmark: b1", "verdict:   ok", "file:      /results/run-02.json",
				"brokerbench - (commit -, -)", "machine:   -: -, 0 cores, 0.0 GiB,",
				"settings:", "  producer/acks = all", "  producer/linger.ms = 50",
				"figures:", "  publish.p99          8", "  publishRate          1005",
			},
		},
		{
			name:  "trend",
			print: func(w io.Writer) { PrintTrend(w, recs, "publish.p99") },
			want: []string{
				"quick on kafka, 1 node(s) (benchmark b1)",
				"publish.p99  ▁▁█  min 2, max 8, 3 run(s)",
				"  TIME              ID      VERSION  PUBLISH.P99  VERDICT",
				"  2026-03-01 00:00  run-00  4.1.0    2            ok",
				"  2026-03-01 01:00  run-01  4.1.0    2.02         ok",
				"  2026-03-01 02:00  run-02  4.2.0    8            ok",
			},
		},
		{
			name:  "trend of a metric no run has",
			print: func(w io.Writer) { PrintTrend(w, recs, "e2e.p99") },
			want:  []string{"no run has e2e.p99; metrics: publish.p99, publishRate"},
		},
		{
			name:  "compare",
			print: func(w io.Writer) { PrintCompare(w, &recs[0], &recs[2]) },
			want: []string{
				"A: run-00 (2026-03-01 00:00, quick on kafka)",
				"B: run-02 (2026-03-01 02:00, quick on kafka)",
				"differences:",
				"  broker version: 4.1.0 -> 4.2.0",
				"  setting producer/acks: (unset) -> all",
				"  setting producer/linger.ms: 5 -> 50",
				"FIGURE       A     B     CHANGE",
				"publish.p99  2     8     +300.0%  worse",
				"publishRate  1020  1005  -1.5%",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.print(&b)
			lines := strings.Split(b.String(), "\n")
			i := 0
			for _, w := range tc.want {
				for i < len(lines) && !strings.HasPrefix(strings.TrimRight(lines[i], " "), w) {
					i++
				}
				if i == len(lines) {
					t.Fatalf("no line %q (in this order) in:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestSparkline(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want string
	}{
		{nil, ""},
		{[]float64{3, 3, 3}, "▁▁▁"},
		{[]float64{0, 1, 2, 3, 4, 5, 6, 7}, "▁▂▃▄▅▆▇█"},
		{[]float64{10, 0}, "█▁"},
	} {
		if got := Sparkline(tc.in); got != tc.want {
			t.Errorf("Sparkline(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
