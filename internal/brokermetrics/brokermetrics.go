// Package brokermetrics reads brokers' own metrics from their Prometheus
// endpoints during a run, so that results hold the broker's view (messages
// in, request rates, under-replicated partitions) beside the client's, on
// the same intervals.
package brokermetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Target is one node's metrics endpoint: a Prometheus endpoint
// (http://host:port/metrics), or one of another form that its broker's
// Reader reads (a NATS server's /varz, a Redis server's INFO).
type Target struct {
	Node int
	URL  string
	// Read reads the endpoint; nil: Prometheus.
	Read Reader
}

// Reader reads one node's metrics endpoint at url as counters and gauges
// by series key, named as a Prometheus exporter would name them. client
// is for endpoints read over HTTP. A Reader is called from several
// goroutines at once, one per node.
type Reader func(ctx context.Context, client *http.Client, url string) (counters, gauges map[string]float64, err error)

// Prometheus reads a Prometheus text endpoint over HTTP (see Parse).
func Prometheus(ctx context.Context, client *http.Client, url string) (counters, gauges map[string]float64, err error) {
	return HTTP(Parse)(ctx, client, url)
}

// HTTP returns a Reader that gets url and reads the body with parse.
func HTTP(parse func(io.Reader) (counters, gauges map[string]float64, err error)) Reader {
	return func(ctx context.Context, client *http.Client, url string) (map[string]float64, map[string]float64, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("%s: %s", url, resp.Status)
		}
		return parse(io.LimitReader(resp.Body, maxBody))
	}
}

// scrapeTimeout bounds one scrape of all targets: a sample is taken at the
// end of every interval, so a slow endpoint must not hold the next one up.
const scrapeTimeout = 400 * time.Millisecond

// maxBody bounds what is read from one endpoint.
const maxBody = 8 << 20

// Scraper samples targets. It is not safe for concurrent use.
type Scraper struct {
	targets []Target
	client  *http.Client
	// last holds each node's previous counter values and when they were
	// read.
	last map[int]reading
}

type reading struct {
	at     time.Time
	values map[string]float64 // series key -> value, counters only
}

// New returns a scraper of targets and takes a first reading, so that
// the first Sample has rates.
func New(targets []Target) *Scraper {
	s := &Scraper{targets: targets, client: &http.Client{Timeout: scrapeTimeout}, last: map[int]reading{}}
	s.Sample()
	return s
}

// Sample reads every target and returns the cluster's figures since the
// previous call, by series: counters (names ending in _total) as rates
// per second under their name without the suffix, plus "_per_second";
// gauges as read. Both are summed over nodes, except gauges whose name
// says they are times, percentiles or ratios ("_ms", "quantile",
// "_ratio"), which take the largest node's. A target that cannot be read is left out of that
// sample; nil when no target could be read.
func (s *Scraper) Sample() map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	type result struct {
		node     int
		at       time.Time
		counters map[string]float64
		gauges   map[string]float64
		err      error
	}
	results := make([]result, len(s.targets))
	var wg sync.WaitGroup
	for i, t := range s.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read := t.Read
			if read == nil {
				read = Prometheus
			}
			c, g, err := read(ctx, s.client, t.URL)
			results[i] = result{node: t.Node, at: time.Now(), counters: c, gauges: g, err: err}
		}()
	}
	wg.Wait()
	out := map[string]float64{}
	read := false
	for _, r := range results {
		if r.err != nil {
			continue
		}
		read = true
		for k, v := range r.gauges {
			if worstOf(k) {
				out[k] = max(out[k], v)
			} else {
				out[k] += v
			}
		}
		prev, ok := s.last[r.node]
		s.last[r.node] = reading{at: r.at, values: r.counters}
		if !ok {
			continue
		}
		dt := r.at.Sub(prev.at).Seconds()
		for k, v := range r.counters {
			before, seen := prev.values[k]
			if !seen || dt <= 0 {
				continue
			}
			delta := v - before
			if delta < 0 {
				delta = v // the counter was reset: the node restarted
			}
			out[rateKey(k)] += delta / dt
		}
	}
	if !read {
		return nil
	}
	return out
}

// headlines are the series reports chart, by name (a counter's as its
// rate's): what the reference studies read of each broker — messages and
// bytes in and out, request rates and times, replication, backlog and
// alarms. The rest stays in the results.
var headlines = map[string]bool{
	"kafka_server_messagesin_per_second": true, "kafka_server_bytesin_per_second": true, "kafka_server_bytesout_per_second": true,
	"kafka_network_requests_per_second": true, "kafka_network_request_total_time_ms_p99": true,
	"kafka_server_replicamanager_underreplicatedpartitions": true, "kafka_server_replicamanager_underminisrpartitioncount": true,
	"kafka_server_replicamanager_isrshrinks_per_second": true, "kafka_server_replicamanager_isrexpands_per_second": true,
	"kafka_controller_offlinepartitionscount": true, "kafka_log_flush_time_ms_p99": true,

	"rabbitmq_global_messages_received_per_second": true, "rabbitmq_global_messages_confirmed_per_second": true,
	"rabbitmq_global_messages_delivered_per_second": true, "rabbitmq_global_messages_redelivered_per_second": true,
	"rabbitmq_queue_messages": true, "rabbitmq_alarms_memory_used_watermark": true, "rabbitmq_alarms_free_disk_space_watermark": true,

	"nats_messages_in_per_second": true, "nats_messages_out_per_second": true, "nats_slow_consumers_per_second": true,
	"nats_jetstream_storage_bytes": true, "nats_jetstream_api_errors_per_second": true,

	"redis_commands_per_second": true, "redis_bytes_in_per_second": true, "redis_memory_used_bytes": true,

	"pulsar_in_messages_per_second": true, "pulsar_out_messages_per_second": true, "pulsar_in_bytes_per_second": true,
	"pulsar_out_bytes_per_second": true, "pulsar_msg_backlog": true, "pulsar_storage_size": true,

	"artemis_messages_in_per_second": true, "artemis_messages_out_per_second": true, "artemis_messages": true,
	"artemis_address_memory_bytes": true, "artemis_addresses_paging": true,

	"rocketmq_messages_in_per_second": true, "rocketmq_messages_out_per_second": true, "rocketmq_throughput_in_per_second": true,
	"rocketmq_throughput_out_per_second": true, "rocketmq_storage_size_bytes": true,
}

// Headline reports whether the series called name (without labels) is
// one reports chart.
func Headline(name string) bool { return headlines[name] }

// Headlines returns the names of the series reports chart, sorted.
func Headlines() []string { return slices.Sorted(maps.Keys(headlines)) }

// rateKey is the key of a counter's rate: its name without "_total",
// with "_per_second", then its labels.
func rateKey(counter string) string {
	name, labels, _ := strings.Cut(counter, "{")
	if labels != "" {
		labels = "{" + labels
	}
	return strings.TrimSuffix(name, "_total") + "_per_second" + labels
}

// worstOf reports whether a gauge is a time, a percentile or a ratio (a
// share of a disk used), which do not add up across nodes.
func worstOf(key string) bool {
	name, _, _ := strings.Cut(key, "{")
	return strings.Contains(key, "_ms") || strings.Contains(key, "quantile") || strings.HasSuffix(name, "_ratio")
}

// Parse reads Prometheus's text format and returns its counters and
// gauges by series key: the metric's name and its labels but "version"
// (sorted, name="value" in braces), summed over series that differ only
// in labels left out. Untyped samples count as gauges, and a gauge or an
// untyped sample whose name ends in "_total", the suffix of counters, as
// a counter (Pulsar's brokers type their counters as gauges). Samples
// without a value (NaN, as a percentile of nothing reads) or with an
// infinite one are skipped, and so are summaries, histograms and the
// runtime's metrics (JVM, Go, process, exporter), and the families of
// OpenMetrics types the text format lacks (info, stateset: the
// OpenTelemetry exporter's target_info, which RocketMQ serves).
func Parse(r io.Reader) (counters, gauges map[string]float64, err error) {
	text, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(withoutOpenMetricsTypes(text)))
	if err != nil {
		return nil, nil, err
	}
	counters, gauges = map[string]float64{}, map[string]float64{}
	for name, f := range families {
		if runtimeFamily(name) {
			continue
		}
		for _, m := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			key := seriesKey(name, m.GetLabel())
			if f.GetType() == dto.MetricType_COUNTER || strings.HasSuffix(name, "_total") {
				counters[key] += v
			} else {
				gauges[key] += v
			}
		}
	}
	return counters, gauges, nil
}

// textTypes are the metric types of Prometheus's text format.
var textTypes = map[string]bool{"counter": true, "gauge": true, "histogram": true, "summary": true, "untyped": true}

// withoutOpenMetricsTypes returns text without the families whose TYPE
// line names a type the text format does not have (OpenMetrics' info,
// stateset, ...): their TYPE and HELP lines and their samples, named as
// the family or, for an info, with "_info" added.
func withoutOpenMetricsTypes(text []byte) []byte {
	drop := map[string]bool{}
	lines := bytes.SplitAfter(text, []byte("\n"))
	for _, line := range lines {
		f := strings.Fields(string(line))
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && !textTypes[f[3]] {
			drop[f[2]], drop[f[2]+"_info"] = true, true
		}
	}
	if len(drop) == 0 {
		return text
	}
	out := make([]byte, 0, len(text))
	for _, line := range lines {
		f := strings.Fields(string(line))
		name := ""
		switch {
		case len(f) >= 3 && f[0] == "#" && (f[1] == "TYPE" || f[1] == "HELP"):
			name = f[2]
		case len(f) > 0:
			name, _, _ = strings.Cut(f[0], "{")
		}
		if !drop[name] {
			out = append(out, line...)
		}
	}
	return out
}

// runtimePrefixes name the metrics of the runtime a broker runs in (the
// JVM, the Go runtime, the process, the exporter itself), left out: they
// are many, and brokerbench samples the broker processes' CPU and memory
// itself.
var runtimePrefixes = []string{"jvm_", "process_", "jmx_", "go_", "promhttp_"}

func runtimeFamily(name string) bool {
	for _, p := range runtimePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	var parts []string
	for _, l := range labels {
		if l.GetName() == "version" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	if len(parts) == 0 {
		return name
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}
