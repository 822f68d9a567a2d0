package livemetrics

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// scrape returns the endpoint's page.
func scrape(t *testing.T, s *Server) string {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// TestObserve: counters add each interval's counts, latency gauges are
// in seconds, and the phase follows the run.
func TestObserve(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Begin("w", "kafka")
	iv := results.Interval{StartSeconds: 0, EndSeconds: 1, Phase: results.Measure, Backlog: 7,
		Traffic: results.Traffic{Sent: 100, Acked: 90, Consumed: 80, PublishMBps: 0.5, PublishLatency: metrics.Latency{P99: 12.5}}}
	iv.System = &results.System{Broker: map[string]float64{`kafka_network_requests_per_second{request="Produce"}`: 42, "gone": 1}}
	s.Observe(iv)
	iv.Phase = results.Drain
	iv.System.Broker = map[string]float64{`kafka_network_requests_per_second{request="Produce"}`: 43}
	s.Observe(iv)
	page := scrape(t, s)
	for _, want := range []string{
		"brokerbench_messages_acknowledged_total 180",
		"brokerbench_published_bytes_total 1e+06",
		"brokerbench_backlog_messages 7",
		`brokerbench_publish_latency_seconds{quantile="0.99"} 0.0125`,
		`brokerbench_phase{phase="drain"} 1`,
		`brokerbench_run_info{driver="kafka",workload="w"} 1`,
		`brokerbench_broker_metric{series="kafka_network_requests_per_second{request=\"Produce\"}"} 43`,
	} {
		if !strings.Contains(page, want+"\n") {
			t.Errorf("missing %q in:\n%s", want, page)
		}
	}
	if strings.Contains(page, `phase="measure"`) {
		t.Error("the phase left behind is still shown")
	}
	if strings.Contains(page, `series="gone"`) {
		t.Error("a broker series the last interval did not have is still shown")
	}
	s.End()
	if page := scrape(t, s); strings.Contains(page, "brokerbench_run_info{") {
		t.Error("a finished run is still shown as in progress")
	}
}

// TestDashboardQueriesServedMetrics: every brokerbench metric the Grafana
// dashboard in deploy/grafana queries is one the endpoint serves.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	data, err := os.ReadFile("../../deploy/grafana/brokerbench-live.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Begin("w", "kafka")
	s.Observe(results.Interval{EndSeconds: 1, Phase: results.Measure, System: &results.System{BrokerSampled: true,
		Broker: map[string]float64{"kafka_server_messagesin_per_second": 1}}})
	page := scrape(t, s)
	name := regexp.MustCompile(`brokerbench_[a-z_]+`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				queried++
				if !strings.Contains(page, "\n"+m) {
					t.Errorf("panel %q queries %s, which the endpoint does not serve", p.Title, m)
				}
			}
		}
	}
	if queried < 10 {
		t.Errorf("the dashboard queries only %d brokerbench metrics", queried)
	}
}
