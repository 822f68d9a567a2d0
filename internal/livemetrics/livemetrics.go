// Package livemetrics serves a running benchmark's figures on a
// Prometheus endpoint (--metrics-addr), for dashboards and alerts while
// it runs: message counters, the backlog, rates and latency percentiles
// of the last interval, the phase, and the client's and local brokers'
// CPU. Names follow Prometheus conventions: base units in the name,
// counters ending in _total.
package livemetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Server is the endpoint of one brokerbench process.
type Server struct {
	srv  *http.Server
	addr string

	sent, acked, failed, consumed prometheus.Counter
	publishedBytes, consumedBytes prometheus.Counter
	backlog                       prometheus.Gauge
	publishRate, consumeRate      prometheus.Gauge
	publishLatency, endToEnd, lag *prometheus.GaugeVec
	phase                         *prometheus.GaugeVec
	clientCPU, brokerCPU          prometheus.Gauge
	broker                        *prometheus.GaugeVec
	run                           *prometheus.GaugeVec
	lastPhase                     results.Phase
}

// quantiles are the percentiles exported for each latency, by label.
var quantiles = []struct {
	label string
	of    func(l metrics.Latency) float64
}{
	{"0.5", func(l metrics.Latency) float64 { return l.P50 }},
	{"0.95", func(l metrics.Latency) float64 { return l.P95 }},
	{"0.99", func(l metrics.Latency) float64 { return l.P99 }},
	{"0.999", func(l metrics.Latency) float64 { return l.P999 }},
	{"1", func(l metrics.Latency) float64 { return l.Max }},
}

// Start listens on addr (host:port; port 0 picks one) and serves
// /metrics until Close. The listener is open when Start returns.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	f := factory{reg}
	s := &Server{
		addr:           ln.Addr().String(),
		sent:           f.counter("brokerbench_messages_sent_total", "Messages handed to the producers."),
		acked:          f.counter("brokerbench_messages_acknowledged_total", "Messages the broker acknowledged."),
		failed:         f.counter("brokerbench_messages_failed_total", "Messages whose send failed."),
		consumed:       f.counter("brokerbench_messages_consumed_total", "Messages the consumers received."),
		publishedBytes: f.counter("brokerbench_published_bytes_total", "Bytes of messages acknowledged."),
		consumedBytes:  f.counter("brokerbench_consumed_bytes_total", "Bytes of messages consumed."),
		backlog:        f.gauge("brokerbench_backlog_messages", "Messages acknowledged and not yet consumed, at the end of the last interval."),
		publishRate:    f.gauge("brokerbench_publish_rate_messages_per_second", "Acknowledged messages per second in the last interval."),
		consumeRate:    f.gauge("brokerbench_consume_rate_messages_per_second", "Consumed messages per second in the last interval."),
		publishLatency: f.gaugeVec("brokerbench_publish_latency_seconds", "Publish latency (intended send time to acknowledgement) in the last interval, by quantile.", "quantile"),
		endToEnd:       f.gaugeVec("brokerbench_end_to_end_latency_seconds", "End-to-end latency (intended send time to delivery) in the last interval, by quantile.", "quantile"),
		lag:            f.gaugeVec("brokerbench_send_lag_seconds", "How late sends were against their intended time in the last interval, by quantile.", "quantile"),
		phase:          f.gaugeVec("brokerbench_phase", "1 for the run's current phase (warmup, measure, drain, backlog-build, backlog-drain).", "phase"),
		clientCPU:      f.gauge("brokerbench_client_cpu_cores", "CPU of the brokerbench process in the last interval, in cores."),
		brokerCPU:      f.gauge("brokerbench_broker_cpu_cores", "CPU of the local broker nodes in the last interval, in cores (when brokerbench runs them)."),
		broker:         f.gaugeVec("brokerbench_broker_metric", "The brokers' own metrics, as brokerbench read them from their Prometheus endpoints in the last interval, by series (name and labels; counters as rates per second).", "series"),
		run:            f.gaugeVec("brokerbench_run_info", "1 for the run in progress, labelled by workload and driver.", "workload", "driver"),
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the endpoint listens on.
func (s *Server) Addr() string { return s.addr }

// Begin marks a run of workload on driver as in progress.
func (s *Server) Begin(workload, driver string) {
	s.run.Reset()
	s.run.WithLabelValues(workload, driver).Set(1)
}

// Observe takes one finished interval of the run in progress.
func (s *Server) Observe(iv results.Interval) {
	secs := iv.EndSeconds - iv.StartSeconds
	s.sent.Add(float64(iv.Sent))
	s.acked.Add(float64(iv.Acked))
	s.failed.Add(float64(iv.Failed))
	s.consumed.Add(float64(iv.Consumed))
	s.publishedBytes.Add(iv.PublishMBps * 1e6 * secs)
	s.consumedBytes.Add(iv.ConsumeMBps * 1e6 * secs)
	s.backlog.Set(float64(iv.Backlog))
	s.publishRate.Set(iv.PublishRate)
	s.consumeRate.Set(iv.ConsumeRate)
	for _, l := range []struct {
		vec *prometheus.GaugeVec
		lat metrics.Latency
	}{{s.publishLatency, iv.PublishLatency}, {s.endToEnd, iv.EndToEndLatency}, {s.lag, iv.SendLag}} {
		for _, q := range quantiles {
			// Latencies are recorded in milliseconds.
			l.vec.WithLabelValues(q.label).Set(q.of(l.lat) / 1e3)
		}
	}
	if iv.Phase != s.lastPhase {
		s.phase.Reset()
		s.phase.WithLabelValues(string(iv.Phase)).Set(1)
		s.lastPhase = iv.Phase
	}
	if sys := iv.System; sys != nil {
		s.clientCPU.Set(sys.ClientCPU / 100)
		if sys.BrokerSampled {
			s.brokerCPU.Set(sys.BrokerCPU / 100)
		}
		s.broker.Reset()
		for k, v := range sys.Broker {
			s.broker.WithLabelValues(k).Set(v)
		}
	}
}

// End marks the run finished.
func (s *Server) End() {
	s.run.Reset()
	s.phase.Reset()
	s.lastPhase = ""
}

// Close stops the endpoint, waiting up to 2 s for scrapes in progress.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = s.srv.Close()
	}
}

// factory registers metrics on one registry.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}
