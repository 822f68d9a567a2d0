package mqtt

import (
	"slices"
	"testing"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestLocalListener: a driver config that asks for TLS, by its setting
// or its serverUri's scheme, reaches the local server's "tls" listener,
// given as an mqtts:// URL; any other its plain one, as it is.
func TestLocalListener(t *testing.T) {
	for _, tc := range []struct {
		common workload.Properties
		want   string
	}{
		{nil, "plain"},
		{workload.Properties{{Key: "serverUri", Value: "tcp://127.0.0.1:1883"}}, "plain"},
		{workload.Properties{{Key: "tls", Value: "true"}}, "tls"},
		{workload.Properties{{Key: "serverUri", Value: "ssl://127.0.0.1:8883"}}, "tls"},
		{workload.Properties{{Key: "serverUri", Value: "mqtts://localhost"}}, "tls"},
	} {
		if got := localListener(&workload.DriverConfig{Name: "mqtt", Common: tc.common}); got != tc.want {
			t.Errorf("%v: listener %q, want %q", tc.common, got, tc.want)
		}
	}
	st := local.Status{Listeners: []string{"plain", "tls"}, Bootstrap: []string{"127.0.0.1:1883"},
		Nodes: []local.NodeStatus{{Node: local.Node{ID: 1, Host: "127.0.0.1", Ports: map[string]int{"client": 1883, "tls": 1884}}}}}
	if got := localEndpoints(st, "tls"); !slices.Equal(got, []string{"mqtts://127.0.0.1:1884"}) {
		t.Errorf("the tls listener: %q", got)
	}
	if got := localEndpoints(st, "plain"); !slices.Equal(got, []string{"127.0.0.1:1883"}) {
		t.Errorf("the plain listener: %q", got)
	}
}
