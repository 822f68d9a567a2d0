package stream

import (
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the RabbitMQ node the tests start, on a port of their own, when the
// first test that needs it asks.
var server = testbroker.NewLazyLocal("rabbitmq", 29673)

func TestMain(m *testing.M) { server.Main(m) }

// streamAddr is the node's stream listener.
func streamAddr(t *testing.T) string {
	t.Helper()
	eps := server.Get(t).Cluster.Status().Endpoints("stream")
	if len(eps) != 1 {
		t.Fatalf("stream listeners: %v", eps)
	}
	return eps[0]
}

// TestConformance: the stream driver passes the driver contract's
// conformance suite against a real RabbitMQ, without and with sub-entry
// batching and compression.
func TestConformance(t *testing.T) {
	for name, producer := range map[string]workload.Properties{
		"plain":            nil,
		"sub-entries-gzip": {{Key: "subEntrySize", Value: "10"}, {Key: "compression", Value: "gzip"}},
	} {
		t.Run(name, func(t *testing.T) {
			dc := &workload.DriverConfig{Name: "rabbitmq-stream", Source: "test", ReplicationFactor: 1, Producer: producer}
			brokertest.Run(t, "rabbitmq-stream", drivertest.Target{
				Connect: func(t *testing.T) driver.Driver {
					d, err := New(dc, driver.Options{Endpoints: []string{streamAddr(t)}})
					if err != nil {
						t.Fatal(err)
					}
					return d
				},
				Unreachable: func(*testing.T) (driver.Driver, error) {
					return New(dc, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
				},
			})
		})
	}
}

// TestSettingsRefused: compression without sub-entries, and an unknown
// codec, are input errors that say what to change.
func TestSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		props workload.Properties
		want  string
	}{
		{workload.Properties{{Key: "compression", Value: "zstd"}}, "set subEntrySize above 1"},
		{workload.Properties{{Key: "compression", Value: "brotli"}, {Key: "subEntrySize", Value: "5"}}, "none, gzip, snappy, lz4 or zstd"},
		{workload.Properties{{Key: "batchPublishingDelayMs", Value: "1000"}}, "at most 500"},
	} {
		_, err := New(&workload.DriverConfig{Name: "rabbitmq-stream", Source: "s.yaml", Producer: tc.props}, driver.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.props, err, tc.want)
		}
	}
}
