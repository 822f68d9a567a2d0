package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestLiveMetricsEndpoint: while a run lasts, --metrics-addr serves its
// live figures for Prometheus: counters that grow, the last interval's
// latency quantiles in seconds, the phase and the run; once the run
// ends, the endpoint is gone. The endpoint is polled for as long as the
// run lasts, however long a busy machine takes to set it up, and the
// run's verdict on its rate is the machine's.
func TestLiveMetricsEndpoint(t *testing.T) {
	addr := lazyBroker.Get(t).Addr
	dir := t.TempDir()
	wl := filepath.Join(dir, "live.yaml")
	if err := os.WriteFile(wl, []byte("name: live\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 100\nrate: 1000\nwarmup: 1s\nduration: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const endpoint = "127.0.0.1:29299"
	done := make(chan int)
	go func() {
		code, _, _ := execute("run", wl, "--broker", addr, "--metrics-addr", endpoint, "--quiet", "--out", filepath.Join(dir, "r.json"))
		done <- code
	}()
	acked := regexp.MustCompile(`(?m)^brokerbench_messages_acknowledged_total (\S+)$`)
	var last float64
	var page string
	seen, code, ended := 0, 0, false
	for seen < 2 && !ended {
		select {
		case code = <-done:
			ended = true
		case <-time.After(500 * time.Millisecond):
		}
		resp, err := http.Get("http://" + endpoint + "/metrics")
		if err != nil {
			continue // not listening yet
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := acked.FindStringSubmatch(string(body))
		if m == nil {
			continue
		}
		if v, _ := strconv.ParseFloat(m[1], 64); v > last {
			last, page = v, string(body)
			seen++
		}
	}
	if seen < 2 {
		t.Fatalf("the acknowledged counter did not grow twice during the run (last %v):\n%s", last, page)
	}
	for _, want := range []string{
		`brokerbench_publish_latency_seconds{quantile="0.99"}`,
		`brokerbench_end_to_end_latency_seconds{quantile="0.5"}`,
		`brokerbench_run_info{driver="kafka",workload="live"} 1`,
		`brokerbench_messages_consumed_total`,
		`process_cpu_seconds_total`,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(page) {
			t.Errorf("the endpoint lacks %s", want)
		}
	}
	if !regexp.MustCompile(`brokerbench_phase\{phase="(warmup|measure)"\} 1`).MatchString(page) {
		t.Errorf("no current phase:\n%s", page)
	}
	if !ended {
		code = <-done
	}
	if !completed(t, code) {
		t.Fatalf("run: exit %d", code)
	}
	if _, err := http.Get("http://" + endpoint + "/metrics"); err == nil {
		t.Error("the endpoint still answers after the run")
	}
}
