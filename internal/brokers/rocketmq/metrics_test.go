package rocketmq

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
)

// TestMetricsEndpoint: what a local node's exporter served after a run
// (testdata/metrics.txt, RocketMQ 5.3.3, broker and proxy in local mode)
// is read, its target_info left out, with every headline series the
// reports chart for RocketMQ.
func TestMetricsEndpoint(t *testing.T) {
	text, err := os.ReadFile("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	counters, gauges, err := brokermetrics.Parse(strings.NewReader(string(text)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for k := range counters {
		name, _, _ := strings.Cut(k, "{")
		seen[strings.TrimSuffix(name, "_total")+"_per_second"] = true
	}
	for k := range gauges {
		name, _, _ := strings.Cut(k, "{")
		seen[name] = true
	}
	if seen["target_info"] {
		t.Error("target_info, an OpenMetrics info, was read")
	}
	for _, h := range brokermetrics.Headlines() {
		if strings.HasPrefix(h, "rocketmq_") && !seen[h] {
			t.Errorf("headline %s is not served", h)
		}
	}
}

// TestNoStatsYet: only a broker's NoSuchElementException (its runtime
// asked before its store statistics' first sample) is waited out.
func TestNoStatsYet(t *testing.T) {
	early := &remotingError{addr: "127.0.0.1:10911", code: codeGetBrokerRuntimeInfo, status: 1,
		remark: "java.util.NoSuchElementException, java.base/java.util.LinkedList.getLast(LinkedList.java:261)"}
	if !noStatsYet(early) || !noStatsYet(fmt.Errorf("broker: %w", early)) {
		t.Error("the first-sample failure is not recognised")
	}
	other := &remotingError{addr: "127.0.0.1:10911", code: codeGetBrokerRuntimeInfo, status: 1, remark: "system busy"}
	if noStatsYet(other) || noStatsYet(nil) || noStatsYet(errors.New("NoSuchElementException")) {
		t.Error("another failure is waited out")
	}
}
