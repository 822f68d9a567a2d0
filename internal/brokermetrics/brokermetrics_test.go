package brokermetrics

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// node serves a counter that grows by step per scrape and fixed gauges.
func node(t *testing.T, start, step float64, urp, p99 float64) (*httptest.Server, *atomic.Int64) {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1) - 1
		fmt.Fprintf(w, `# TYPE kafka_server_messagesin_total counter
kafka_server_messagesin_total %g
# TYPE kafka_network_requests_total counter
kafka_network_requests_total{request="Produce",version="9"} %g
kafka_network_requests_total{request="Produce",version="11"} %g
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions %g
# TYPE kafka_network_request_total_time_ms gauge
kafka_network_request_total_time_ms{request="Produce",quantile="0.99"} %g
# TYPE disk_store_usage_ratio gauge
disk_store_usage_ratio %g
# TYPE jvm_memory_used_bytes gauge
jvm_memory_used_bytes{area="heap"} 1e9
`, start+step*float64(n), float64(n), float64(n), urp, p99, urp/10)
	}))
	t.Cleanup(srv.Close)
	return srv, &scrapes
}

func TestSampleRatesAndGauges(t *testing.T) {
	a, _ := node(t, 1000, 500, 2, 7)
	b, _ := node(t, 0, 500, 1, 30)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	s := New([]Target{{Node: 1, URL: a.URL}, {Node: 2, URL: b.URL}, {Node: 3, URL: dead.URL}})
	time.Sleep(50 * time.Millisecond)
	got := s.Sample()
	if got == nil {
		t.Fatal("no sample")
	}
	// 1,000 messages in across the nodes since the first reading, in
	// about 50 ms or a little more.
	rate := got["kafka_server_messagesin_per_second"]
	if rate <= 0 || rate > 1000/0.05 {
		t.Errorf("messages in per second %v, want (0, %v]", rate, 1000/0.05)
	}
	// Each node's rate has its own interval (its scrapes' times); each
	// node has 2 produce requests (one per version) to 500 messages, so
	// the sums are 4 to 1,000 however long each node's interval was.
	if r := got[`kafka_network_requests_per_second{request="Produce"}`]; math.Abs(r-rate*4/1000) > rate*4/1000*1e-9 {
		t.Errorf("produce requests per second %v: both versions of both nodes must add up to 4 per 1,000 messages, as %v", r, rate*4/1000)
	}
	if v := got["kafka_server_replicamanager_underreplicatedpartitions"]; v != 3 {
		t.Errorf("under-replicated partitions %v, want the nodes' sum 3", v)
	}
	if v := got[`kafka_network_request_total_time_ms{quantile="0.99",request="Produce"}`]; v != 30 {
		t.Errorf("p99 time %v, want the slowest node's 30", v)
	}
	if v := got["disk_store_usage_ratio"]; v != 0.2 {
		t.Errorf("share of the disk used %v, want the fullest node's 0.2, not a sum", v)
	}
	if _, ok := got["kafka_server_messagesin_total"]; ok {
		t.Error("a counter's raw value is in the sample")
	}
	if _, ok := got[`jvm_memory_used_bytes{area="heap"}`]; ok {
		t.Error("the JVM's metrics are in the sample")
	}
}

func TestSampleCounterReset(t *testing.T) {
	var value atomic.Int64
	value.Store(1_000_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE m_total counter\nm_total %d\n", value.Load())
	}))
	defer srv.Close()
	s := New([]Target{{Node: 1, URL: srv.URL}})
	value.Store(10) // the node restarted
	time.Sleep(20 * time.Millisecond)
	got := s.Sample()
	if r := got["m_per_second"]; r <= 0 || r > 10/0.02 {
		t.Errorf("rate after a reset %v: want the new count over the interval, not a negative rate", r)
	}
}

func TestNoTargetReadable(t *testing.T) {
	if got := New([]Target{{Node: 1, URL: "http://127.0.0.1:1/metrics"}}).Sample(); got != nil {
		t.Errorf("an unreachable target gave %v", got)
	}
}

// TestParseTotalsAndNaN: a gauge named as a counter is read as one, and
// samples without a finite value are left out (results, in JSON, could
// not hold them).
func TestParseTotalsAndNaN(t *testing.T) {
	c, g, err := Parse(strings.NewReader(`# TYPE pulsar_in_messages_total gauge
pulsar_in_messages_total{namespace="public/default"} 120
# TYPE pulsar_topic_load_time_median_ms gauge
pulsar_topic_load_time_median_ms NaN
# TYPE up gauge
up +Inf
# TYPE pulsar_storage_size gauge
pulsar_storage_size 4096
`))
	if err != nil {
		t.Fatal(err)
	}
	if c[`pulsar_in_messages_total{namespace="public/default"}`] != 120 || len(c) != 1 {
		t.Errorf("counters %v", c)
	}
	if g["pulsar_storage_size"] != 4096 || len(g) != 1 {
		t.Errorf("gauges %v", g)
	}
}

// TestParseOpenMetricsInfo: the OpenTelemetry exporter's families of
// OpenMetrics types (RocketMQ's target_info, an info) are left out, and
// the rest of its endpoint is read.
func TestParseOpenMetricsInfo(t *testing.T) {
	c, g, err := Parse(strings.NewReader(`# TYPE target info
# HELP target Target metadata
target_info{service_name="rocketmq"} 1
# TYPE rocketmq_messages_in_total counter
# HELP rocketmq_messages_in_total Total number of incoming messages
rocketmq_messages_in_total{topic="t"} 42
# TYPE rocketmq_topic_number gauge
rocketmq_topic_number 3
`))
	if err != nil {
		t.Fatal(err)
	}
	if c[`rocketmq_messages_in_total{topic="t"}`] != 42 || len(c) != 1 || g["rocketmq_topic_number"] != 3 || len(g) != 1 {
		t.Errorf("counters %v, gauges %v", c, g)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("# TYPE target info\ntarget_info{a=\"b\"} 1\n# TYPE c_total counter\nc_total 2\n")
	f.Add("# TYPE a_total counter\na_total{x=\"1\"} 3\n# TYPE g gauge\ng 1.5\nu 2\n")
	f.Add("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n")
	f.Add("# TYPE p_total gauge\np_total 7\n# TYPE q gauge\nq NaN\nr +Inf\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, g, err := Parse(strings.NewReader(text))
		if err == nil && (c == nil || g == nil) {
			t.Error("no error and nil maps")
		}
		for _, m := range []map[string]float64{c, g} {
			for k, v := range m {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("%s = %v: no value is kept that results cannot hold", k, v)
				}
			}
		}
	})
}
