package nsq

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	gonsq "github.com/nsqio/go-nsq"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the nsqd the tests start, on a port of their own, when the
// first test that needs it asks.
var server = testbroker.NewLazyLocal("nsq", 29150)

func TestMain(m *testing.M) { server.Main(m) }

// httpAddr is the test nsqd's HTTP address, which the driver is given.
func httpAddr(t *testing.T) string {
	t.Helper()
	return server.Get(t).Cluster.Nodes()[0].Addr("http")
}

// TestConformance: the NSQ driver passes the driver contract's
// conformance suite against a real nsqd.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "nsq", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver {
			d, err := New(&workload.DriverConfig{Name: "nsq", Source: "test", ReplicationFactor: 1}, driver.Options{Endpoints: []string{httpAddr(t)}})
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "nsq", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
		},
	})
}

// TestOMBDriverFile: OMB's NSQ driver file, as OMB ships it, loads and
// names nsqd's host with nsqdHost (its HTTP API on NSQ's port 4151) and
// nsqlookupd's with lookupHost (its HTTP API on NSQ's port 4161).
func TestOMBDriverFile(t *testing.T) {
	text, err := os.ReadFile("testdata/omb-nsq.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := workload.ParseDriver("nsq.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	if dc.Name != "nsq" {
		t.Fatalf("OMB's class maps to driver %q; want nsq", dc.Name)
	}
	cfg, err := parseConfig(dc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.nsqds, []string{"localhost:4151"}) || cfg.lookupd != "localhost:4161" {
		t.Errorf("nsqdHost and lookupHost localhost give nsqd's HTTP API at %q and nsqlookupd's at %q; want localhost:4151 and localhost:4161", cfg.nsqds, cfg.lookupd)
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
		nsqds     []string // the nsqd HTTP addresses used
		lookupd   string   // nsqlookupd's HTTP address used
		inFlight  int
		err       string // a part of the error; "" for none
	}{
		// Nothing given: nsqd's default HTTP port on loopback, no
		// nsqlookupd.
		{name: "defaults", nsqds: []string{"127.0.0.1:4151"}, inFlight: 1000},
		// Several nsqd and an nsqlookupd in the file.
		{name: "cluster in the file", common: append(prop("nsqdHttpAddress", "10.0.0.1:4151, 10.0.0.2:4151"), prop("lookupdHttpAddress", "10.0.0.9:4161")...),
			nsqds: []string{"10.0.0.1:4151", "10.0.0.2:4151"}, lookupd: "10.0.0.9:4161", inFlight: 1000},
		// Endpoints given on the command line replace the file's
		// addresses, nsqlookupd's included.
		{name: "endpoint", common: append(prop("nsqdHttpAddress", "10.0.0.1:4151"), prop("lookupdHttpAddress", "10.0.0.9:4161")...), endpoints: []string{"10.0.0.2:9151"},
			nsqds: []string{"10.0.0.2:9151"}, inFlight: 1000},
		// A local cluster's endpoints: every nsqd, then nsqlookupd.
		{name: "cluster endpoints", endpoints: []string{"a:1", "b:1", "nsqlookupd://l:2"}, nsqds: []string{"a:1", "b:1"}, lookupd: "l:2", inFlight: 1000},
		// One nsqlookupd at most, and at least one nsqd.
		{name: "two nsqlookupd", endpoints: []string{"a:1", "nsqlookupd://l:2", "nsqlookupd://m:2"}, err: "one nsqlookupd"},
		{name: "no nsqd", endpoints: []string{"nsqlookupd://l:2"}, err: "at least one nsqd"},
		// maxInFlight is at least 1.
		{name: "maxInFlight 0", consumer: prop("maxInFlight", "0"), err: "d.yaml:3"},
		{name: "maxInFlight", consumer: prop("maxInFlight", "50"), nsqds: []string{"127.0.0.1:4151"}, inFlight: 50},
		// nsqd takes an output buffer of -1 (none) or 64 bytes and more.
		{name: "outputBufferSize -1", consumer: prop("outputBufferSize", "-1"), nsqds: []string{"127.0.0.1:4151"}, inFlight: 1000},
		{name: "outputBufferSize 10", consumer: prop("outputBufferSize", "10"), err: "d.yaml:3"},
		// A misspelled setting is refused with a suggestion.
		{name: "misspelled", consumer: prop("maxInFlght", "5"), err: `did you mean "maxInFlight"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig(&workload.DriverConfig{Name: "nsq", Source: "d.yaml", Common: c.common, Consumer: c.consumer}, c.endpoints)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v; want one containing %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case !slices.Equal(cfg.nsqds, c.nsqds) || cfg.lookupd != c.lookupd || cfg.maxInFlight != c.inFlight:
				t.Errorf("nsqd %q, nsqlookupd %q, maxInFlight %d; want %q, %q, %d", cfg.nsqds, cfg.lookupd, cfg.maxInFlight, c.nsqds, c.lookupd, c.inFlight)
			}
		})
	}
}

// TestNames: names nsqd would refuse are refused before a request, with
// what it takes.
func TestNames(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "nsq", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range []string{"", "a topic", strings.Repeat("x", 65)} {
		if err := d.CreateTopic(ctx, driver.TopicSpec{Name: name, Partitions: 1}); err == nil || !strings.Contains(err.Error(), "1 to 64") {
			t.Errorf("topic %q: %v", name, err)
		}
	}
}

// TestBrokerVersion: the version nsqd reports.
func TestBrokerVersion(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "nsq", Source: "test"}, driver.Options{Endpoints: []string{httpAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || v != "NSQ "+Version {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
}

// TestSendErrorKind: send failures are counted by nsqd's error code or
// by condition.
func TestSendErrorKind(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{gonsq.ErrStopped, "CLOSED"},                                                      // the producer was closed
		{gonsq.ErrNotConnected, "NOT_CONNECTED"},                                          // its connection was lost
		{gonsq.ErrProtocol{Reason: "E_BAD_MESSAGE PUB message too big"}, "E_BAD_MESSAGE"}, // nsqd refused it
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, "NETWORK"},
		{errors.New("something"), "other"},
	}
	for _, c := range cases {
		if got := (sendError{c.err}).Kind(); got != c.want {
			t.Errorf("%v: kind %q; want %q", c.err, got, c.want)
		}
	}
}

// TestCheck: a message larger than nsqd's --max-msg-size (1 MiB by
// default) and a missing existing topic are input errors before a run.
func TestCheck(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "nsq", Source: "test"}, driver.Options{Endpoints: []string{httpAddr(t)}})
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
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 1<<20 + 1}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "--max-msg-size of 1048576") {
		t.Errorf("a message over the limit: %v", err)
	}
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 100, ExistingTopics: []string{"bb-check-missing"}}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), `"bb-check-missing" does not exist`) {
		t.Errorf("a missing topic: %v", err)
	}
}

// TestOMBDriverFileRuns: brokerbench runs OMB's 1-topic-1-partition-1kb
// workload with OMB's nsq.yaml, both as OMB ships them, from the root
// of OMB's layout, on the test's nsqd as a local cluster
// (--local-brokers 1), whose address replaces the file's.
func TestOMBDriverFileRuns(t *testing.T) {
	c := server.Get(t).Cluster
	omblayout.Run(t, "driver-nsq/nsq.yaml", omblayout.Target{LocalPort: c.Port, StateDir: c.StateDir})
}
