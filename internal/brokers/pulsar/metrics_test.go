package pulsar

import (
	"os"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
)

// TestMetricsEndpoint: what a local node's /metrics/ served during a run
// (testdata/metrics.txt, Pulsar 4.0.7, metrics by namespace) is read
// with every headline series the reports chart for Pulsar, its counters
// (typed as gauges) as counters, and none of its NaN samples.
func TestMetricsEndpoint(t *testing.T) {
	f, err := os.Open("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counters, gauges, err := brokermetrics.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	names := func(m map[string]float64) map[string]bool {
		out := map[string]bool{}
		for k := range m {
			name, _, _ := strings.Cut(k, "{")
			out[name] = true
		}
		return out
	}
	cn, gn := names(counters), names(gauges)
	headlines := 0
	for _, h := range brokermetrics.Headlines() {
		if !strings.HasPrefix(h, "pulsar_") {
			continue
		}
		headlines++
		if counter, ok := strings.CutSuffix(h, "_per_second"); ok {
			if !cn[counter+"_total"] {
				t.Errorf("headline %s: no counter %s_total", h, counter)
			}
		} else if !gn[h] {
			t.Errorf("headline %s: no such gauge", h)
		}
	}
	if headlines == 0 {
		t.Error("no headline series for Pulsar")
	}
	if v := counters[`pulsar_in_messages_total{cluster="standalone",namespace="public/brokerbench"}`]; v < 100000 {
		t.Errorf("messages in: %v", v)
	}
}
