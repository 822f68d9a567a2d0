package artemis

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/amqp10"
	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the broker the tests start, secured (a password on every
// listener, and a TLS one), on a port of their own, when the first test
// that needs it asks.
var server = testbroker.NewLazyLocalWith("artemis", 29616, func(c *local.Cluster) {
	c.Listeners, c.HeapMB = []string{"plain", "tls"}, 512
})

func TestMain(m *testing.M) { server.Main(m) }

// connect returns a driver of the test broker's listener, with its
// credentials unless cfg gives others.
func connect(t *testing.T, listener string, common workload.Properties) (driver.Driver, error) {
	t.Helper()
	c := server.Get(t).Cluster
	sec := c.Security()
	pw, err := sec.Password()
	if err != nil {
		t.Fatal(err)
	}
	creds := &driver.Credentials{CAFile: sec.CAFile, Username: sec.Username, Password: pw}
	addr := c.Nodes()[0].Addr(c.ListenerKey(listener))
	return New(&workload.DriverConfig{Name: "artemis", Source: "test", Common: common}, driver.Options{Endpoints: []string{addr}, Credentials: creds})
}

// TestConformance: the Artemis driver passes the driver contract's
// conformance suite against a real broker, logged in with SASL PLAIN.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "artemis", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver {
			d, err := connect(t, "plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "artemis", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
		},
	})
}

// TestSecurity: the broker's TLS listener is reached with its
// authority trusted, and a wrong password is a refusal that says what to
// check.
func TestSecurity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := connect(t, "tls", workload.Properties{{Key: "tls", Value: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.BrokerVersion(ctx); err != nil || v != "ActiveMQ Artemis "+Version {
		t.Errorf("over TLS: BrokerVersion = %q, %v", v, err)
	}
	wrong, err := connect(t, "plain", workload.Properties{{Key: "username", Value: local.Username}, {Key: "password", Value: "wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if _, err := wrong.BrokerVersion(ctx); !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "password") {
		t.Errorf("a wrong password: %v; want a refusal naming the password", err)
	}
}

// TestDeleteMissingTopic: deleting an address the broker does not have
// is ErrTopicNotFound.
func TestDeleteMissingTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := connect(t, "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.DeleteTopic(ctx, "bb-never-made"); !errors.Is(err, driver.ErrTopicNotFound) {
		t.Errorf("DeleteTopic of a missing address: %v", err)
	}
}

// TestOMBDriverFile: OMB's Artemis driver file, as OMB ships it, loads,
// and its core protocol URL names the broker's acceptor.
func TestOMBDriverFile(t *testing.T) {
	text, err := os.ReadFile("testdata/omb-artemis.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := workload.ParseDriver("artemis.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	if dc.Name != "artemis" {
		t.Fatalf("OMB's class maps to driver %q; want artemis", dc.Name)
	}
	cfg, err := parseConfig(dc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.addrs, []string{"localhost:61616"}) || cfg.tls != nil {
		t.Errorf("brokerAddress tcp://localhost:61616 gives %q (TLS %v); want localhost:61616 without TLS", cfg.addrs, cfg.tls != nil)
	}
}

// TestSettings: the driver's settings, their defaults and its refusals.
func TestSettings(t *testing.T) {
	prop := func(k, v string) workload.Properties {
		return workload.Properties{{Key: k, Value: v, File: "d.yaml", Line: 3}}
	}
	cases := []struct {
		name      string
		common    workload.Properties
		consumer  workload.Properties
		endpoints []string
		local     *driver.Credentials
		addr      string // the acceptors reached, separated by commas
		tls       bool
		user      string
		err       string // a part of the error; "" for none
	}{
		// Nothing given: Artemis' default acceptor on loopback, anonymously.
		{name: "defaults", addr: "127.0.0.1:61616"},
		// amqps:// asks for TLS, on AMQP's TLS port when none is given.
		{name: "amqps", common: prop("url", "amqps://broker"), addr: "broker:5671", tls: true},
		// A URL's user logs in.
		{name: "user in URL", common: prop("url", "amqp://u:p@h:1"), addr: "h:1", user: "u"},
		// An endpoint given on the command line wins over the file's.
		{name: "endpoint", common: prop("url", "amqp://a:1"), endpoints: []string{"b:2"}, addr: "b:2"},
		// A cluster's nodes, from the command line or the config.
		{name: "two endpoints", endpoints: []string{"a:1", "b:1"}, addr: "a:1,b:1"},
		{name: "two URLs", common: prop("url", "amqps://a:1, amqps://b:1"), addr: "a:1,b:1", tls: true},
		// The nodes of a cluster are all reached over TLS, or none.
		{name: "TLS for some", common: prop("url", "amqps://a:1,amqp://b:1"), err: "all over TLS"},
		// A local broker's credentials serve when the config has none.
		{name: "local credentials", local: &driver.Credentials{Username: "lu", Password: "lp"}, addr: "127.0.0.1:61616", user: "lu"},
		{name: "own user", common: prop("username", "me"), local: &driver.Credentials{Username: "lu", Password: "lp"}, addr: "127.0.0.1:61616", user: "me"},
		// Other schemes are refused where they were set.
		{name: "scheme", common: prop("url", "http://h:1"), err: "d.yaml:3"},
		// credit is at least 1.
		{name: "credit 0", consumer: prop("credit", "0"), err: "d.yaml:3"},
		// A misspelled setting is refused with a suggestion.
		{name: "misspelled", common: prop("usrname", "x"), err: `did you mean "username"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig(&workload.DriverConfig{Name: "artemis", Source: "d.yaml", Common: c.common, Consumer: c.consumer}, c.endpoints, c.local)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v; want one containing %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case strings.Join(cfg.addrs, ",") != c.addr || (cfg.tls != nil) != c.tls || cfg.username != c.user:
				t.Errorf("addresses %q, TLS %v, user %q; want %q, %v, %q", cfg.addrs, cfg.tls != nil, cfg.username, c.addr, c.tls, c.user)
			}
		})
	}
}

// TestEffectiveConfigHidesPassword: the results file says a password was
// set, never what it is.
func TestEffectiveConfigHidesPassword(t *testing.T) {
	cfg, err := parseConfig(&workload.DriverConfig{Name: "artemis", Source: "test",
		Common: workload.Properties{{Key: "url", Value: "amqp://u:s3cret@h:1"}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.effective["common"] {
		if strings.Contains(p.Value, "s3cret") {
			t.Errorf("%s = %q shows the password", p.Key, p.Value)
		}
	}
}

// TestWithoutManagement: a driver without a management address, for an
// AMQP 1.0 broker other than Artemis, offers no written count and no
// re-read, which need it.
func TestWithoutManagement(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "artemis", Source: "test", Common: workload.Properties{{Key: "managementAddress", Value: ""}}}, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(driver.WrittenCounter); ok {
		t.Error("the driver counts written messages without a management address")
	}
	if _, ok := d.(driver.Rereader); ok {
		t.Error("the driver re-reads without a management address")
	}
}

// TestClusterDriver: a driver of several nodes re-reads them but counts
// no written messages, which their counts would overstate, and refuses
// faults aimed at a topic's leader, which it has none of, saying why.
func TestClusterDriver(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "artemis", Source: "test"}, driver.Options{Endpoints: []string{"127.0.1.1:61616", "127.0.1.2:61616"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(driver.WrittenCounter); ok {
		t.Error("a cluster's driver counts written messages")
	}
	if _, ok := d.(driver.Rereader); !ok {
		t.Error("a cluster's driver does not re-read")
	}
	if u, ok := d.(driver.Unplaced); !ok || !strings.Contains(u.Unplaced(), "no node that leads a topic") {
		t.Errorf("a cluster's driver does not say why it names no leader (%v)", ok)
	}
	single, err := New(&workload.DriverConfig{Name: "artemis", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:61616"}})
	if err != nil {
		t.Fatal(err)
	}
	if rc, ok := single.(driver.ResettingWrittenCounter); !ok || !rc.WrittenResets() {
		t.Error("one broker's written count is not declared to start again from zero when it restarts")
	}
}

// TestClientsSpread: clients connect to a cluster's nodes in turn, and
// one whose node does not answer connects to the next. The nodes here
// take each connection and close it at once.
func TestClientsSpread(t *testing.T) {
	var (
		mu       sync.Mutex
		accepted []int
		addrs    []string
	)
	for i := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted = append(accepted, i+1)
				mu.Unlock()
				c.Close()
			}
		}()
	}
	d, err := newDriver(&workload.DriverConfig{Name: "artemis", Source: "test"}, driver.Options{Endpoints: addrs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		if _, _, err := amqp10.ConnectFrom(ctx, d.brokers, d.turn()); err == nil {
			t.Fatal("connected without a broker")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 2, 3, 2, 3, 1}; !slices.Equal(accepted, want) {
		t.Errorf("nodes connected to: %v; want %v", accepted, want)
	}
}

// TestOMBDriverFileRuns: brokerbench runs OMB's 1-topic-1-partition-1kb
// workload with OMB's artemis.yaml, both as OMB ships them, from the
// root of OMB's layout, on the test's broker as a local cluster
// (--local-brokers 1): its address replaces the file's, and the run
// logs in with its credentials.
func TestOMBDriverFileRuns(t *testing.T) {
	c := server.Get(t).Cluster
	omblayout.Run(t, "driver-artemis/artemis.yaml", omblayout.Target{LocalPort: c.Port, StateDir: c.StateDir})
}
