package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func TestDriverFromResults(t *testing.T) {
	props := func(kv ...string) workload.Properties {
		var p workload.Properties
		for i := 0; i < len(kv); i += 2 {
			p = append(p, workload.Property{Key: kv[i], Value: kv[i+1]})
		}
		return p
	}
	// Kafka's effective settings: its common section is "client", and
	// its addresses are the target's to give.
	dc, err := DriverFromResults(results.Driver{
		Name: "kafka", Format: workload.Native, ReplicationFactor: 3,
		Effective: map[string]workload.Properties{
			"client":   props("bootstrap.servers", "127.0.0.1:9092", "client.id", "bench"),
			"producer": props("linger.ms", "5", "acks", "all"),
			"consumer": props("fetch.min.bytes", "1"),
			"topic":    props("min.insync.replicas", "2"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if dc.Name != "kafka" || dc.ReplicationFactor != 3 || dc.Format != workload.Native {
		t.Errorf("driver %+v", dc)
	}
	for _, tc := range []struct {
		section workload.Properties
		key     string
		want    string
		ok      bool
	}{
		{dc.Common, "client.id", "bench", true},
		{dc.Common, "bootstrap.servers", "", false},
		{dc.Producer, "linger.ms", "5", true},
		{dc.Producer, "acks", "all", true},
		{dc.Consumer, "fetch.min.bytes", "1", true},
		{dc.Topic, "min.insync.replicas", "2", true},
	} {
		if got, ok := tc.section.Get(tc.key); ok != tc.ok || got != tc.want {
			t.Errorf("%s = %q (%v), want %q (%v)", tc.key, got, ok, tc.want, tc.ok)
		}
	}

	for _, tc := range []struct {
		name      string
		effective map[string]workload.Properties
		want      string
	}{
		{
			// A value the results file masked.
			name:      "masked",
			effective: map[string]workload.Properties{"common": props("sasl.jaas.config", "x password=\""+secret.Mask+"\"")},
			want:      "the driver setting common/sasl.jaas.config is a secret, masked in the results: run the benchmark again by hand with its driver file",
		},
		{
			// A setting named as a secret, redacted by name.
			name:      "redacted by name",
			effective: map[string]workload.Properties{"producer": props("ssl.key.password", "[redacted]")},
			want:      "producer/ssl.key.password is a secret",
		},
		{
			name:      "unknown section",
			effective: map[string]workload.Properties{"admin": props("x", "1")},
			want:      `driver section "admin"`,
		},
	} {
		_, err := DriverFromResults(results.Driver{Name: "kafka", Effective: tc.effective})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestRecheckRefusesBeforeRunning: what makes a recheck refuse before
// any rerun is made, as invalid input naming the run and what to do.
func TestRecheckRefusesBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	masked := filepath.Join(dir, "masked.json")
	res := &results.Run{
		Schema: results.Schema, ID: "masked-run", Workload: &workload.Workload{Name: "w"},
		Driver: results.Driver{Name: "kafka", Effective: map[string]workload.Properties{"client": {{Key: "sasl.jaas.config", Value: secret.Mask}}}},
	}
	if err := results.Write(masked, res); err != nil {
		t.Fatal(err)
	}
	rec := func(id, version, file string) history.Record {
		return history.Record{ID: id, File: file, Env: history.Env{BrokerVersion: version}}
	}
	pair := func(last, first history.Record) *history.Checked {
		return &history.Checked{Changes: []history.Change{{Metric: "e2e.p99", Last: last, First: first}}}
	}
	for _, tc := range []struct {
		name    string
		checked *history.Checked
		n       int
		broker  string
		want    string
	}{
		{
			name: "too many reruns", checked: pair(rec("a", "", ""), rec("b", "", "")), n: history.MaxReruns + 1,
			want: "--rerun: must be between 1 and 10",
		},
		{
			// One broker cannot be two releases.
			name: "releases differ with a broker", broker: "127.0.0.1:9092", n: 1,
			checked: pair(rec("a", "Apache Kafka 3.9.1", masked), rec("b", "Apache Kafka 4.0.0", masked)),
			want:    "ran on different broker releases (Apache Kafka 3.9.1, Apache Kafka 4.0.0)",
		},
		{
			// An imported run without its results file.
			name: "no results file", n: 1, checked: pair(rec("a", "", ""), rec("b", "", "")),
			want: "run a cannot be made again: the history holds no results file of it",
		},
		{
			name: "masked secret", n: 1, checked: pair(rec("a", "", masked), rec("b", "", masked)),
			want: "run a cannot be made again: " + masked + ": the driver setting client/sasl.jaas.config is a secret",
		},
	} {
		o := DefaultRunOptions()
		o.Broker = tc.broker
		var stdout, stderr strings.Builder
		err := Recheck(context.Background(), IO{Out: &stdout, Err: &stderr}, tc.checked, tc.n, 0.05, o)
		if KindOf(err) != BadInput || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (kind %v), want invalid input %q", tc.name, err, KindOf(err), tc.want)
		}
		if stdout.Len()+stderr.Len() > 0 {
			t.Errorf("%s: a refused recheck wrote\n%s%s", tc.name, stdout.String(), stderr.String())
		}
	}
}
