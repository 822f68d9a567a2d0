package engine

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/brokerbench/brokerbench/internal/sysmetrics"
)

// TestEndpointHostPort: the host and port of an endpoint in each form the
// drivers take one.
func TestEndpointHostPort(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		host     string
		port     uint16
		ok       bool
	}{
		{"127.0.0.1:9092", "127.0.0.1", 9092, true},                          // Kafka's bootstrap servers
		{" 127.0.0.1:9092", "127.0.0.1", 9092, true},                         // after a comma in --broker
		{"[::1]:9092", "::1", 9092, true},                                    // IPv6
		{"pulsar://localhost:6650", "localhost", 6650, true},                 // a scheme
		{"nats://u:p@127.0.0.1:4222", "127.0.0.1", 4222, true},               // credentials
		{"amqp://guest:guest@localhost:5672/vhost", "localhost", 5672, true}, // and a path
		{"http://127.0.0.1:8080/admin/v2", "127.0.0.1", 8080, true},          // an HTTP endpoint
		{"kafka-0.kafka:9092", "kafka-0.kafka", 9092, true},                  // a name: loopback or not is decided by what it resolves to
		{"127.0.0.1", "", 0, false},                                          // no port
		{"pulsar://localhost", "", 0, false},                                 // a URL without a port
		{"127.0.0.1:0", "", 0, false},                                        // no usable port
		{"127.0.0.1:65536", "", 0, false},                                    // beyond 16 bits
		{"127.0.0.1:kafka", "", 0, false},                                    // a service name
	} {
		host, port, ok := endpointHostPort(tc.endpoint)
		if host != tc.host || port != tc.port || ok != tc.ok {
			t.Errorf("endpointHostPort(%q) = %q, %d, %v; want %q, %d, %v", tc.endpoint, host, port, ok, tc.host, tc.port, tc.ok)
		}
	}
}

// TestBrokerProcesses: the processes listening at a run's loopback
// addresses become broker nodes 1..n in the endpoints' order, each once;
// addresses elsewhere, names that are not loopback alone, endpoints
// without a port and brokerbench itself do not.
func TestBrokerProcesses(t *testing.T) {
	const self = 7
	listening := map[netip.AddrPort][]int{
		netip.MustParseAddrPort("127.0.0.1:9092"): {100, self}, // the broker, and a listener of brokerbench's own there
		netip.MustParseAddrPort("127.0.0.1:9093"): {101},
		netip.MustParseAddrPort("[::1]:9093"):     {101}, // the same process on its IPv6 wildcard
		netip.MustParseAddrPort("127.0.0.2:9092"): {102},
		netip.MustParseAddrPort("127.0.0.3:9092"): {self}, // brokerbench alone
	}
	names := map[int]string{100: "java", 102: "java"} // 101's name cannot be read
	hosts := map[string][]netip.Addr{
		"localhost":      {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
		"mixed":          {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.5")},
		"broker.example": {netip.MustParseAddr("10.0.0.5")},
	}
	var resolved []string
	var asked []netip.AddrPort
	resolve := func(host string) []netip.Addr { resolved = append(resolved, host); return hosts[host] }
	listen := func(at []netip.AddrPort) [][]int {
		asked = append(asked, at...)
		out := make([][]int, len(at))
		for i, a := range at {
			out[i] = listening[a]
		}
		return out
	}
	name := func(pid int) string { return names[pid] }

	endpoints := []string{
		"10.0.0.5:9092",           // another machine
		"127.0.0.1:9092",          // the broker: node 1
		"localhost:9093",          // a name of loopback addresses alone: node 2, found at both
		"mixed:9092",              // a name with an address elsewhere
		"broker.example:9092",     // a name elsewhere
		"127.0.0.1",               // no port
		"pulsar://127.0.0.2:9092", // a URL: node 3
		"127.0.0.1:9092",          // node 1 again
		"127.0.0.1:9094",          // no one listens there
		"unknown:9092",            // a name that does not resolve
	}
	nodes, said := brokerProcesses(endpoints, self, resolve, listen, name)
	if want := []sysmetrics.Node{{ID: 1, PID: 100}, {ID: 2, PID: 101}, {ID: 3, PID: 102}}; !slices.Equal(nodes, want) {
		t.Errorf("nodes %v, want %v", nodes, want)
	}
	if want := []string{"pid 100 (java) listening on 127.0.0.1:9092", "pid 101 listening on 127.0.0.1:9093", "pid 102 (java) listening on 127.0.0.2:9092"}; !slices.Equal(said, want) {
		t.Errorf("said %q, want %q", said, want)
	}
	if want := []string{"localhost", "mixed", "broker.example", "unknown"}; !slices.Equal(resolved, want) {
		t.Errorf("resolved %q, want only the names, %q", resolved, want)
	}
	wantAsked := []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:9092"), netip.MustParseAddrPort("127.0.0.1:9093"), netip.MustParseAddrPort("[::1]:9093"),
		netip.MustParseAddrPort("127.0.0.2:9092"), netip.MustParseAddrPort("127.0.0.1:9092"), netip.MustParseAddrPort("127.0.0.1:9094"),
	}
	if !slices.Equal(asked, wantAsked) {
		t.Errorf("asked for listeners at %v, want the loopback addresses alone, %v", asked, wantAsked)
	}

	// Nothing on loopback: no listener is looked for.
	asked = nil
	if nodes, said := brokerProcesses([]string{"10.0.0.5:9092", "broker.example:9092"}, self, resolve, listen, name); nodes != nil || said != nil || asked != nil {
		t.Errorf("a broker elsewhere gave nodes %v, said %q, asked %v", nodes, said, asked)
	}
	// Only brokerbench listens there: no node.
	if nodes, said := brokerProcesses([]string{"127.0.0.3:9092"}, self, resolve, listen, name); nodes != nil || said != nil {
		t.Errorf("brokerbench's own listener gave nodes %v, said %q", nodes, said)
	}
}
