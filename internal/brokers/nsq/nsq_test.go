package nsq

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gonsq "github.com/nsqio/go-nsq"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/pki"
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
	cfg, err := parseConfig(dc, nil, nil)
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
			cfg, err := parseConfig(&workload.DriverConfig{Name: "nsq", Source: "d.yaml", Common: c.common, Consumer: c.consumer}, c.endpoints, nil)
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

// TestTLSSettings: the TLS settings every driver takes, an https://
// address, OMB's nsqdHost with TLS, and a secured local cluster's
// credentials.
func TestTLSSettings(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewAuthority("test CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, keyStore := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem")
	if err := ca.WriteFiles(caFile, filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("client")
	if err != nil {
		t.Fatal(err)
	}
	pem, err := leaf.KeyStorePEM(ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyStore, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	prop := func(kv ...string) workload.Properties {
		var ps workload.Properties
		for i := 0; i < len(kv); i += 2 {
			ps = append(ps, workload.Property{Key: kv[i], Value: kv[i+1], File: "d.yaml", Line: 3})
		}
		return ps
	}
	localCreds := &driver.Credentials{CAFile: caFile, CertFile: keyStore, KeyFile: keyStore}
	cases := []struct {
		name      string
		common    workload.Properties
		endpoints []string
		local     *driver.Credentials
		nsqds     []string // the nsqd addresses used
		tls       bool     // whether the driver connects over TLS
		certs     int      // client certificates presented
		err       string   // a part of the error; "" for none
	}{
		// Without tls, plain HTTP and TCP, even to a secured local
		// cluster (which then refuses the driver).
		{name: "plain", endpoints: []string{"a:1"}, local: localCreds, nsqds: []string{"a:1"}},
		// tls: true, the system's authorities, no client certificate.
		{name: "tls", common: prop("tls", "true"), endpoints: []string{"a:4152"}, nsqds: []string{"a:4152"}, tls: true},
		// https:// addresses turn TLS on, and are reached without it.
		{name: "https addresses", endpoints: []string{"https://a:4152", "https://b:4152", "nsqlookupd://l:4161"}, nsqds: []string{"a:4152", "b:4152"}, tls: true},
		// Every nsqd over HTTPS or none.
		{name: "mixed https", endpoints: []string{"https://a:4152", "b:4151"}, err: "every nsqd over HTTPS or none"},
		// OMB's nsqdHost names NSQ's HTTPS port 4152 with TLS.
		{name: "nsqdHost with tls", common: prop("nsqdHost", "h", "tls", "true"), nsqds: []string{"h:4152"}, tls: true},
		// A trust store and a key store given in the config.
		{name: "stores", common: prop("tls", "true", "tlsTrustStore", caFile, "tlsKeyStore", keyStore), endpoints: []string{"a:4152"}, nsqds: []string{"a:4152"}, tls: true, certs: 1},
		// A secured local cluster's client certificate is presented.
		{name: "local", common: prop("tls", "true"), endpoints: []string{"a:4152"}, local: localCreds, nsqds: []string{"a:4152"}, tls: true, certs: 1},
		// A trust store that is not there is refused at its line.
		{name: "missing trust store", common: prop("tls", "true", "tlsTrustStore", filepath.Join(dir, "none.pem")), err: "d.yaml:3"},
		// A key store that holds no key is refused at its line.
		{name: "key store without key", common: prop("tls", "true", "tlsKeyStore", caFile), err: "tlsKeyStore"},
		// nsqlookupd has no TLS: an https:// nsqlookupd is refused.
		{name: "https nsqlookupd", endpoints: []string{"a:1", "nsqlookupd://https://l:4161"}, err: "nsqlookupd HTTP address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig(&workload.DriverConfig{Name: "nsq", Source: "d.yaml", Common: c.common}, c.endpoints, c.local)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v; want one containing %q", err, c.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !slices.Equal(cfg.nsqds, c.nsqds) || (cfg.tls != nil) != c.tls {
				t.Fatalf("nsqd %q, TLS %v; want %q, %v", cfg.nsqds, cfg.tls != nil, c.nsqds, c.tls)
			}
			if cfg.tls != nil && len(cfg.tls.Certificates) != c.certs {
				t.Errorf("%d client certificates; want %d", len(cfg.tls.Certificates), c.certs)
			}
			tlsSaid := ""
			for _, p := range cfg.effective["common"] {
				if strings.Contains(p.Key, "Password") {
					t.Errorf("effective config shows %s", p.Key)
				}
				if p.Key == "tls" {
					tlsSaid = p.Value
				}
			}
			if tlsSaid != strconv.FormatBool(c.tls) {
				t.Errorf("effective config says tls %q; want %v", tlsSaid, c.tls)
			}
		})
	}
}
