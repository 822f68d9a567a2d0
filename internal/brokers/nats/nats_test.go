package nats

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the nats server the tests start, on a port of their own, when the
// first test that needs it asks.
var server = testbroker.NewLazyLocal("nats", 39422)

func TestMain(m *testing.M) { server.Main(m) }

func newDriver(t *testing.T, dc *workload.DriverConfig) driver.Driver {
	t.Helper()
	d, err := New(dc, driver.Options{Endpoints: []string{"nats://" + server.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConformance: the NATS JetStream driver passes the driver contract's
// conformance suite against a real nats-server.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "nats", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver {
			return newDriver(t, &workload.DriverConfig{Name: "nats", Source: "test", ReplicationFactor: 1})
		},
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "nats", Source: "test"}, driver.Options{Endpoints: []string{"nats://127.0.0.1:1"}})
		},
	})
}

// TestOMBDriverFile: OMB's NATS driver file names the server with
// natsHostUrl; unknown settings are refused with their line.
func TestOMBDriverFile(t *testing.T) {
	dc, err := workload.ParseDriver("nats.yaml", []byte("name: NATS\ndriverClass: io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver\nnatsHostUrl: nats://"+server.Get(t).Addr+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(dc, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "NATS Server 2.") {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
	_, err = New(&workload.DriverConfig{Name: "nats", Source: "d.yaml", Producer: workload.Properties{{Key: "maxPendng", Value: "5", File: "d.yaml", Line: 3}}}, driver.Options{})
	if err == nil || !strings.Contains(err.Error(), "d.yaml:3") || !strings.Contains(err.Error(), `did you mean "maxPending"`) {
		t.Errorf("a misspelled setting: %v", err)
	}
}
