package nsq

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestLocalNode: one nsqd is a node of its own on 127.0.0.1, without
// nsqlookupd, and a driver is given its HTTP API alone.
func TestLocalNode(t *testing.T) {
	c := NewLocal(4150, 1)
	c.StateDir = t.TempDir()
	nodes := Kind{}.Layout(c)
	if len(nodes) != 1 || nodes[0].Host != "127.0.0.1" || !nodes[0].HasRole(roleNSQD) {
		t.Fatalf("layout %+v: want one nsqd on 127.0.0.1", nodes)
	}
	n := nodes[0]
	n.Ports = map[string]int{"client": 4150, "http": 41151}
	cmd := strings.Join(Kind{}.Command(c, n), " ")
	for _, want := range []string{"/nsqd ", "--data-path=" + n.Dir + "/data", "--tcp-address=127.0.0.1:4150", "--http-address=127.0.0.1:41151", "--broadcast-address=127.0.0.1"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command lacks %q: %s", want, cmd)
		}
	}
	if strings.Contains(cmd, "lookupd") {
		t.Errorf("a single nsqd registers with no nsqlookupd: %s", cmd)
	}
	st := local.Status{Nodes: []local.NodeStatus{{Node: *n}}}
	if got, want := localEndpoints(st, "http"), []string{"127.0.0.1:41151"}; !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
}

// TestLocalCluster: three nsqd are a cluster: nsqlookupd first, on
// 127.0.2.1, then nsqd i on 127.0.1.i registered with it; nsqlookupd
// reads its listeners from a config file in its directory, which its
// command names; the nsqd nodes alone have the broker role, which
// faults at random choose from, and metrics; and a driver given the
// cluster's endpoints reaches every nsqd and consumes through
// nsqlookupd.
func TestLocalCluster(t *testing.T) {
	c := NewLocal(4150, 3)
	c.StateDir = t.TempDir()
	nodes := Kind{}.Layout(c)
	var layout []string
	for _, n := range nodes {
		layout = append(layout, fmt.Sprintf("%d:%s:%s", n.ID, strings.Join(n.Roles, "+"), n.Host))
	}
	if want := []string{"101:nsqlookupd:127.0.2.1", "1:broker:127.0.1.1", "2:broker:127.0.1.2", "3:broker:127.0.1.3"}; !slices.Equal(layout, want) {
		t.Fatalf("layout %v, want %v", layout, want)
	}
	lookupd := nodes[0]
	if _, ok := lookupd.Ports["client"]; ok {
		t.Errorf("nsqlookupd has a client listener, which would make it a bootstrap address: %v", lookupd.Ports)
	}
	if _, ok := lookupd.Ports["http"]; ok {
		t.Errorf("nsqlookupd's HTTP listener is named as an nsqd's: %v", lookupd.Ports)
	}
	lookupd.Ports = map[string]int{"lookupd-tcp": 41160, "lookupd-http": 41161}
	for i, n := range nodes[1:] {
		n.Ports = map[string]int{"client": 4150, "http": 41151 + i}
	}
	if got := lookupdNode(nodes); got != lookupd {
		t.Fatalf("lookupdNode = %+v", got)
	}
	conf := lookupdConfig(c, lookupd)
	for _, want := range []string{`tcp_address = "127.0.2.1:41160"`, `http_address = "127.0.2.1:41161"`, `broadcast_address = "127.0.2.1"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("nsqlookupd.cfg lacks %s:\n%s", want, conf)
		}
	}
	if cmd := strings.Join(Kind{}.Command(c, lookupd), " "); !strings.HasSuffix(cmd, "/nsqlookupd --config="+lookupd.ConfigFile("nsqlookupd.cfg")) || !strings.Contains(cmd, lookupd.Marker()) {
		t.Errorf("nsqlookupd command %s", cmd)
	}
	n2 := nodes[2]
	cmd := strings.Join(nsqdCommand(c, n2, lookupd), " ")
	for _, want := range []string{"--tcp-address=127.0.1.2:4150", "--http-address=127.0.1.2:41152", "--broadcast-address=127.0.1.2",
		"--lookupd-tcp-address=127.0.2.1:41160", "--data-path=" + n2.Dir + "/data"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("nsqd node 2 command lacks %q: %s", want, cmd)
		}
	}
	if got := (Kind{}).MetricsURL(c, lookupd); got != "" {
		t.Errorf("nsqlookupd metrics at %q; it has none", got)
	}
	if got := (Kind{}).MetricsURL(c, n2); got != "http://127.0.1.2:41152/stats?format=json" {
		t.Errorf("nsqd node 2 metrics at %q", got)
	}
	var st local.Status
	for _, n := range nodes {
		st.Nodes = append(st.Nodes, local.NodeStatus{Node: *n})
	}
	endpoints := LocalKind.Endpoints(st, "http")
	if want := []string{"127.0.1.1:41151", "127.0.1.2:41152", "127.0.1.3:41153", "nsqlookupd://127.0.2.1:41161"}; !slices.Equal(endpoints, want) {
		t.Errorf("endpoints %v, want %v", endpoints, want)
	}
	cfg, err := parseConfig(&workload.DriverConfig{Name: "nsq", Source: "test"}, endpoints, nil)
	if err != nil || len(cfg.nsqds) != 3 || cfg.lookupd != "127.0.2.1:41161" {
		t.Errorf("a driver given the cluster's endpoints: %+v, %v", cfg, err)
	}
}

// TestLocalSecured: an nsqd serving "tls" (asked for as plain,tls or
// tls alone) serves its HTTPS API on a port of its own, the "tls"
// listener's, which a driver asking for TLS is given; it requires TLS
// and a certificate of the cluster's authority of every client; and its
// metrics, which need a client certificate, are not read.
func TestLocalSecured(t *testing.T) {
	for _, listeners := range [][]string{{"plain", "tls"}, {"tls"}} {
		c := NewLocal(4150, 1)
		c.StateDir, c.Listeners = t.TempDir(), listeners
		if err := c.CheckListeners(); err != nil {
			t.Fatalf("%v: %v", listeners, err)
		}
		sec := c.Security()
		if sec == nil {
			t.Fatalf("%v: not secured", listeners)
		}
		n := Kind{}.Layout(c)[0]
		if _, ok := n.Ports[httpsPort]; !ok {
			t.Fatalf("%v: nsqd has no HTTPS port: %v", listeners, n.Ports)
		}
		n.Ports = map[string]int{"client": 4150, "http": 41151, httpsPort: 41152}
		cmd := strings.Join(Kind{}.Command(c, n), " ")
		for _, want := range []string{"--https-address=127.0.0.1:41152", "--tls-cert=" + sec.NodeKeyStore(n), "--tls-key=" + sec.NodeKeyStore(n),
			"--tls-root-ca-file=" + sec.CAFile, "--tls-client-auth-policy=require-verify", "--tls-required=true"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%v: command lacks %q: %s", listeners, want, cmd)
			}
		}
		if got := (Kind{}).MetricsURL(c, n); got != "" {
			t.Errorf("%v: metrics at %q, which answers only clients with a certificate", listeners, got)
		}
		st := local.Status{Nodes: []local.NodeStatus{{Node: *n}}, Listeners: listeners, Bootstrap: []string{"127.0.0.1:4150"}}
		dc := &workload.DriverConfig{Name: "nsq", Common: workload.Properties{{Key: "tls", Value: "true"}}}
		if got, want := LocalKind.Endpoints(st, localListener(dc)), []string{"127.0.0.1:41152"}; !slices.Equal(got, want) {
			t.Errorf("%v: a driver asking for TLS is given %v; want nsqd's HTTPS API %v", listeners, got, want)
		}
	}
	plain := NewLocal(4150, 1)
	plain.StateDir = t.TempDir()
	n := Kind{}.Layout(plain)[0]
	if _, ok := n.Ports[httpsPort]; ok || plain.Security() != nil {
		t.Errorf("an nsqd not asked for TLS has an HTTPS port or credentials: %v", n.Ports)
	}
	if l := localListener(&workload.DriverConfig{Name: "nsq"}); l != "http" {
		t.Errorf("a driver without TLS connects to %q; want nsqd's HTTP API", l)
	}
}

// TestParseLookupdNodes: nsqlookupd's /nodes gives each nsqd's address
// for clients and TCP port, which Ready compares with the nodes'.
func TestParseLookupdNodes(t *testing.T) {
	known, err := parseLookupdNodes(strings.NewReader(`{"producers":[{"remote_address":"127.0.1.1:50000","hostname":"h","broadcast_address":"127.0.1.1",` +
		`"tcp_port":4150,"http_port":41151,"version":"1.3.0","tombstones":[false],"topics":["t"]},{"broadcast_address":"127.0.1.2","tcp_port":4150}]}`))
	if err != nil || len(known) != 2 || !known["127.0.1.1:4150"] || !known["127.0.1.2:4150"] {
		t.Errorf("known %v, %v", known, err)
	}
	if _, err := parseLookupdNodes(strings.NewReader("<html>")); err == nil {
		t.Error("an answer that is not JSON is read without an error")
	}
}

func FuzzParseLookupdNodes(f *testing.F) {
	f.Add(`{"producers":[{"broadcast_address":"127.0.1.1","tcp_port":4150}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		known, err := parseLookupdNodes(strings.NewReader(text))
		if err == nil && known == nil {
			t.Error("no error and a nil map")
		}
	})
}

// FuzzParseEndpoints: whatever addresses the driver is given, it takes
// at least one nsqd and at most one nsqlookupd, unmarked, each a
// host:port, or refuses.
func FuzzParseEndpoints(f *testing.F) {
	f.Add("127.0.1.1:4151,127.0.1.2:4151,nsqlookupd://127.0.2.1:4161")
	f.Add("nsqlookupd://a:1,nsqlookupd://b:1")
	f.Add(",nsqlookupd://nsqlookupd://")
	f.Add("https://127.0.1.1:4152,https://,nsqlookupd://https://a:1")
	f.Fuzz(func(t *testing.T, list string) {
		cfg, err := parseConfig(&workload.DriverConfig{Name: "nsq", Source: "fuzz"}, strings.Split(list, ","), nil)
		if err != nil {
			return
		}
		if len(cfg.nsqds) == 0 || strings.HasPrefix(cfg.lookupd, lookupdScheme) {
			t.Errorf("endpoints %q taken as nsqd %q and nsqlookupd %q", list, cfg.nsqds, cfg.lookupd)
		}
		taken := cfg.nsqds
		if cfg.lookupd != "" {
			taken = append(taken, cfg.lookupd)
		}
		for _, a := range cfg.nsqds {
			if strings.HasPrefix(a, httpsScheme) && cfg.tls == nil {
				t.Errorf("endpoints %q: nsqd %q reached without TLS", list, a)
			}
			if strings.HasPrefix(a, lookupdScheme) {
				t.Errorf("endpoints %q: nsqlookupd taken as an nsqd, %q", list, a)
			}
		}
		for _, a := range taken {
			if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
				t.Errorf("endpoints %q: address %q taken, which is not host:port", list, a)
			}
		}
	})
}
