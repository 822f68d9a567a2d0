package mqtt

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the Mosquitto server the tests start, on a port of their
// own, when the first test that needs it asks.
var server = testbroker.NewLazyLocal("mosquitto", 39883)

func TestMain(m *testing.M) { server.Main(m) }

// TestConformance: the MQTT driver passes the driver contract's
// conformance suite against a real Mosquitto, at QoS 1.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "mqtt", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver {
			d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "test"}, driver.Options{Endpoints: []string{"tcp://" + server.Get(t).Addr}})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "mqtt", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
		},
	})
}

// TestOMBDriverFile: OMB's MQTT 5 driver file, as OMB ships it, loads
// and connects once its serverUri names the server.
func TestOMBDriverFile(t *testing.T) {
	addr := server.Get(t).Addr
	data, err := os.ReadFile("testdata/mqtt5.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := workload.ParseDriver("mqtt5.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if dc.Name != "mqtt" {
		t.Fatalf("driver %q, want mqtt", dc.Name)
	}
	d, err := New(dc, driver.Options{Endpoints: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "mosquitto version 2.") {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
}

// TestMetrics: the server's $SYS values read as counters and gauges.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	counters, gauges, err := readSys(ctx, nil, "mqtt://"+server.Get(t).Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := counters["mqtt_bytes_in_total"]; !ok {
		t.Errorf("counters %v lack mqtt_bytes_in_total", counters)
	}
	if gauges["mqtt_clients_connected"] < 1 {
		t.Errorf("gauges %v: no client connected, though the reader is", gauges)
	}
}
