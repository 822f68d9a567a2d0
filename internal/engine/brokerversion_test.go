package engine

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestLoopbackAddr: addresses on this machine are recognised in the forms
// driver configs give them; others are not.
func TestLoopbackAddr(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		addr     string
		port     int
		ok       bool
	}{
		{"localhost:9092", "127.0.0.1:9092", 9092, true},            // OMB's driver files
		{" 127.0.1.2:9092", "127.0.1.2:9092", 9092, true},           // a local cluster's second broker, after a comma
		{"[::1]:9092", "[::1]:9092", 9092, true},                    // IPv6 loopback
		{"nats://u:p@localhost:4222", "127.0.0.1:4222", 4222, true}, // a URL with credentials
		{"10.0.0.5:9092", "", 0, false},                             // another machine
		{"kafka-0.kafka:9092", "", 0, false},                        // a name not resolved here
		{"127.0.0.1", "", 0, false},                                 // no port
		{"127.0.0.1:0", "", 0, false},                               // no usable port
	} {
		addr, port, ok := loopbackAddr(tc.endpoint)
		if addr != tc.addr || port != tc.port || ok != tc.ok {
			t.Errorf("loopbackAddr(%q) = %q, %d, %v; want %q, %d, %v", tc.endpoint, addr, port, ok, tc.addr, tc.port, tc.ok)
		}
	}
}

// TestLocalVersionAt: a run given the addresses of a local cluster that
// brokerbench runs takes that cluster's exact version; any other run
// keeps what the driver said.
func TestLocalVersionAt(t *testing.T) {
	// clusters are the local clusters by client port.
	clusters := map[int]local.Status{
		9092:  {Running: true, Version: "4.3.1", Bootstrap: []string{"127.0.0.1:9092"}},
		19092: {Running: true, Version: "4.3.1", Bootstrap: []string{"127.0.1.1:19092", "127.0.1.2:19092", "127.0.1.3:19092"}},
		29092: {Running: false, Version: "4.3.1", Bootstrap: []string{"127.0.0.1:29092"}},
	}
	status := func(kind string, port int) (string, local.Status) {
		if kind != "kafka" {
			t.Errorf("asked for a local %s cluster", kind)
		}
		return "Apache Kafka", clusters[port]
	}
	omb := &workload.DriverConfig{Name: "kafka", Common: workload.Properties{{Key: "bootstrap.servers", Value: "localhost:9092"}}}
	plain := &workload.DriverConfig{Name: "kafka"}
	for _, tc := range []struct {
		name      string
		dc        *workload.DriverConfig
		endpoints []string
		want      string
	}{
		// An OMB driver file's localhost:9092, where 'local up' runs Kafka.
		{"omb file on the local cluster", omb, nil, "Apache Kafka 4.3.1"},
		// --broker naming one broker of a local 3-broker cluster.
		{"broker of a cluster", plain, []string{"10.0.0.5:9092", "127.0.1.2:19092"}, "Apache Kafka 4.3.1"},
		// --broker wins over the driver config's addresses.
		{"broker given", omb, []string{"10.0.0.5:9092"}, ""},
		// A stopped cluster serves nothing.
		{"stopped", plain, []string{"127.0.0.1:29092"}, ""},
		// A port with a cluster whose addresses are others.
		{"other addresses", plain, []string{"127.0.0.2:9092"}, ""},
		// No local cluster on that port.
		{"nothing there", plain, []string{"127.0.0.1:29093"}, ""},
		// A driver without local brokers.
		{"no local kind", &workload.DriverConfig{Name: "no-such-driver"}, []string{"127.0.0.1:9092"}, ""},
	} {
		if got := localVersionAt(tc.dc, tc.endpoints, status); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
