package mqtt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the Mosquitto server the tests start, on a port of their
// own, when the first test that needs it asks.
var server = testbroker.NewLazyLocal("mosquitto", 29883)

// secured is a second server, secured (its "plain" and "tls"
// listeners), for the tests of its security alone.
var secured = testbroker.NewLazyLocalWith("mosquitto", 29884, func(c *local.Cluster) { c.Listeners = []string{"plain", "tls"} })

func TestMain(m *testing.M) { server.Main(m, secured.Stop) }

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
	// The values are those of the server's last $SYS update, which may
	// precede the reader's connection.
	if _, ok := gauges["mqtt_clients_connected"]; !ok {
		t.Errorf("gauges %v lack mqtt_clients_connected", gauges)
	}
}

// TestQoS: at every QoS level, every message sent is acknowledged once
// and received once, in order, by a subscription's one consumer.
func TestQoS(t *testing.T) {
	addr := server.Get(t).Addr
	for _, qos := range []string{"0", "1", "2"} {
		t.Run("qos"+qos, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "test", Producer: workload.Properties{{Key: "qos", Value: qos}}}, driver.Options{Endpoints: []string{addr}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			topic := "qos-" + qos + "-" + randomID()
			if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1}); err != nil {
				t.Fatal(err)
			}
			defer d.DeleteTopic(context.Background(), topic)
			const n = 2000
			received := make(chan int, n)
			c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "s"}, func(d *driver.Delivery) {
				var i int
				fmt.Sscan(string(d.Value), &i)
				received <- i
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var acked, failed atomic.Int64
			p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxInFlight: 100}, func(_ *driver.Message, err error) {
				if err != nil {
					failed.Add(1)
				}
				acked.Add(1)
			})
			if err != nil {
				t.Fatal(err)
			}
			msgs := make([]driver.Message, n)
			for i := range msgs {
				msgs[i].Value = []byte(strconv.Itoa(i))
				p.Send(ctx, &msgs[i])
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			p.Close()
			if acked.Load() != n || failed.Load() != 0 {
				t.Fatalf("acknowledged %d, failed %d of %d", acked.Load(), failed.Load(), n)
			}
			for want := range n {
				select {
				case got := <-received:
					if got != want {
						t.Fatalf("received %d, want %d", got, want)
					}
				case <-ctx.Done():
					counters, _, err := readSys(context.Background(), nil, "mqtt://"+addr)
					t.Fatalf("received %d of %d; the server's counters: %v, %v", want, n, counters, err)
				}
			}
		})
	}
}

// TestCheck: a message MQTT cannot carry and a topic brokerbench did not
// create are input errors before the run.
func TestCheck(t *testing.T) {
	addr := server.Get(t).Addr
	d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "test"}, driver.Options{Endpoints: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := d.(driver.Checker)
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 1 << 20}); err != nil {
		t.Errorf("1 MiB messages: %v", err)
	}
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 300 << 20}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "largest packet") {
		t.Errorf("300 MiB messages: %v", err)
	}
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 100, ExistingTopics: []string{"never-created-" + randomID()}}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "not created") {
		t.Errorf("a topic never created: %v", err)
	}
}

// TestOMBDriverFileRuns: brokerbench runs OMB's 1-topic-1-partition-1kb
// workload with OMB's mqtt5.yaml, both as OMB ships them, from the root
// of OMB's layout, on the test's Mosquitto as a local cluster
// (--local-brokers 1), whose address replaces the file's.
func TestOMBDriverFileRuns(t *testing.T) {
	c := server.Get(t).Cluster
	omblayout.Run(t, "driver-mqtt5/mqtt5.yaml", omblayout.Target{LocalPort: c.Port, StateDir: c.StateDir})
}

// TestSecurity: a secured server lets in the cluster's user with its
// password, on its plain listener and over TLS with its authority
// trusted; anonymous clients and a wrong password are refusals that say
// what to check; its metrics are read logged in; its password file holds
// no password in plain text.
func TestSecurity(t *testing.T) {
	c := secured.Get(t).Cluster
	sec := c.Security()
	pw, err := sec.Password()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// version connects to listener as the driver config common says,
	// with the cluster's credentials when creds.
	version := func(listener string, common workload.Properties, creds bool) (string, error) {
		opts := driver.Options{Endpoints: []string{c.Nodes()[0].Addr(c.ListenerKey(listener))}}
		if creds {
			opts.Credentials = &driver.Credentials{CAFile: sec.CAFile, Username: sec.Username, Password: pw}
		}
		d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "test", Common: common}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		return d.BrokerVersion(ctx)
	}
	tls := workload.Properties{{Key: "tls", Value: "true"}}
	for _, tc := range []struct {
		name     string
		listener string
		common   workload.Properties
		creds    bool
		// refused: the server refuses the connection.
		refused bool
	}{
		{"plain, logged in", "plain", nil, true, false},
		{"TLS, logged in", "tls", tls, true, false},
		{"plain, anonymous", "plain", nil, false, true},
		{"TLS, anonymous", "tls", append(workload.Properties{{Key: "tlsTrustStore", Value: sec.CAFile}}, tls...), false, true},
		{"plain, a wrong password", "plain", workload.Properties{{Key: "username", Value: local.Username}, {Key: "password", Value: "not-the-password"}}, false, true},
		{"TLS, a wrong password", "tls", append(workload.Properties{{Key: "username", Value: local.Username}, {Key: "password", Value: "not-the-password"}}, tls...), true, true},
	} {
		v, err := version(tc.listener, tc.common, tc.creds)
		switch {
		case !tc.refused && (err != nil || !strings.HasPrefix(v, "mosquitto version 2.")):
			t.Errorf("%s: BrokerVersion = %q, %v", tc.name, v, err)
		case tc.refused && (!errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "check the username and password")):
			t.Errorf("%s: %v; want a refusal that names the username and password", tc.name, err)
		}
	}

	url := Kind{}.MetricsURL(c, c.Nodes()[0])
	if strings.Contains(url, pw) {
		t.Errorf("the metrics URL %s holds the password", url)
	}
	if counters, _, err := readSys(ctx, nil, url); err != nil || len(counters) == 0 {
		t.Errorf("metrics at %s: %v, %v", url, counters, err)
	}
	if _, _, err := readSys(ctx, nil, "mqtt://"+c.Nodes()[0].Addr("client")); !errors.Is(err, driver.ErrRefused) {
		t.Errorf("metrics read anonymously: %v; want a refusal", err)
	}

	passwd := c.Nodes()[0].ConfigFile("passwd")
	data, err := os.ReadFile(passwd)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(passwd); err != nil || fi.Mode().Perm() != 0o600 || strings.Contains(string(data), pw) || !strings.HasPrefix(string(data), local.Username+":$") {
		t.Errorf("password file %s: mode %v, %v; want 0600, the user and a hash, not the password", passwd, fi.Mode(), err)
	}
}
