package cli

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestAddressesInAnySectionAreNotLocal: a driver config whose addresses
// are in producer or consumer properties alone (files made for Kafka's
// own tools) goes to those addresses, not to a local broker.
func TestAddressesInAnySectionAreNotLocal(t *testing.T) {
	tgt := newTarget(IO{}, "", localFlags{})
	addr := workload.Properties{{Key: "bootstrap.servers", Value: "10.0.0.5:9093"}}
	for name, dc := range map[string]*workload.DriverConfig{
		"common":   {Name: "kafka", Common: addr},
		"producer": {Name: "kafka", Producer: addr},
		"consumer": {Name: "kafka", Consumer: addr},
	} {
		if tgt.usesLocal(dc) {
			t.Errorf("bootstrap.servers in %sConfig: the run would go to a local broker", name)
		}
	}
	if !tgt.usesLocal(&workload.DriverConfig{Name: "kafka"}) {
		t.Error("a config without addresses must go to the local broker")
	}
}
