package nsq

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/pki"
)

// Version is the NSQ release brokerbench builds and runs.
const Version = "1.3.0"

// goSvc is the replacement NSQ's own go.mod makes for one of its
// dependencies; a module that builds NSQ's commands must make it too.
const goSvc = "github.com/judwhite/go-svc=github.com/mreiferson/go-svc@v1.2.2-0.20210815184239-7a96e00010f6"

// NewLocal returns a local NSQ cluster of brokers nsqd nodes, their TCP
// port port (their HTTP APIs on others), with default directories
// ("nsq-PORT" under the state directory).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("nsq-%d", port)),
		Port: port, Brokers: brokers}
}

// Kind is the local.Kind of NSQ. One nsqd is a node of its own, without
// nsqlookupd: clients connect to it directly and there is nothing to
// look up. More are a cluster as NSQ deploys one: an nsqlookupd node
// (its TCP listener "lookupd-tcp", its HTTP API "lookupd-http"), which
// every nsqd registers its topics and channels with, and nsqd node i
// (its TCP listener "client", its HTTP API "http"). The nsqd nodes share
// nothing: a message lives on the node it was published to, without a
// copy elsewhere. nsqd keeps up to 10,000 messages of each topic and
// channel in memory (its default --mem-queue-size) and writes the rest
// to its data directory.
//
// A secured cluster (one that serves "tls") takes TLS clients alone, each
// with a certificate of the cluster's authority (see Listeners).
type Kind struct{}

var (
	_ local.StartInOrder = Kind{}
	_ local.Metered      = Kind{}
	_ local.Securer      = Kind{}
)

// Listeners implements local.Securer. nsqd has one TCP port, on which
// each connection may ask for TLS, and an HTTP API; serving "tls", it
// also serves its HTTPS API (its "tls" port), and requires TLS and a
// client certificate signed by the cluster's authority of every client
// (--tls-required, --tls-client-auth-policy=require-verify): its TCP
// port refuses every command but IDENTIFY to a connection without TLS
// (the one that asks for it), and its HTTP
// API answers 403 TLS_REQUIRED, naming the HTTPS port. NSQ has no users
// of its own (it leaves authentication to an external HTTP server,
// --auth-http-address, which brokerbench does not run): the certificate
// is the client's authentication. A secured cluster thus serves no
// plain client, whether it was asked for "plain,tls" (which a run whose
// driver config sets tls: true starts) or "tls". nsqlookupd has no TLS:
// it carries only addresses, never messages, in plain text.
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// OpenListeners implements local.Securer: none, since a secured nsqd
// asks every client for TLS and a certificate of the cluster's
// authority (see Listeners), on its TCP port and its HTTP API alike.
func (Kind) OpenListeners() []string { return nil }

// ClientAuth implements local.ClientAuther: a certificate, since nsqd
// knows no users.
func (Kind) ClientAuth(sec *local.Security) string {
	return "TLS with the certificate in " + sec.ClientKeyStore + " (tlsKeyStore), trusting " + sec.CAFile + "; nsqd knows no users"
}

// httpsPort is the key of a secured nsqd's HTTPS API among its ports:
// the "tls" listener's port, which drivers that connect to it are given
// (see localEndpoints).
const httpsPort = "tls"

// secured reports whether c's nsqd serve TLS, and returns its
// credentials if so.
func secured(c *local.Cluster) (*local.Security, bool) {
	sec := c.Security()
	return sec, sec != nil && c.Serving("tls")
}

// lookupdNodeID is the id of a cluster's nsqlookupd node, after the
// nsqd nodes' as Kafka's dedicated controllers' are.
const lookupdNodeID = 101

// Roles of the nodes of a local NSQ cluster.
const (
	roleNSQD    = "broker" // an nsqd: the role faults aimed at a random broker choose from
	roleLookupd = "nsqlookupd"
)

// Name implements local.Kind.
func (Kind) Name() string { return "nsq" }

// Product implements local.Kind.
func (Kind) Product() string { return "NSQ" }

// Version implements local.Kind.
func (Kind) Version() string { return Version }

// binary is the executable of NSQ's command name ("nsqd"), under
// cacheDir.
func binary(cacheDir, name string) string {
	return filepath.Join(cacheDir, "nsq-"+Version, name)
}

// commands are the NSQ commands a local cluster runs.
var commands = []string{"nsqd", "nsqlookupd"}

// Install builds the pinned release's nsqd and nsqlookupd from the Go
// module proxy into cacheDir, unless both are already there (Build).
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	var pkgs []string
	for _, name := range commands {
		if _, err := os.Stat(binary(cacheDir, name)); err != nil {
			pkgs = append(pkgs, "apps/"+name)
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	dir := filepath.Dir(binary(cacheDir, "nsqd"))
	logf("building %s %s from the Go module proxy into %s (about 20 s on first use)", strings.Join(pkgs, ", "), Version, dir)
	return Build(ctx, dir, pkgs...)
}

// Build builds commands of the pinned NSQ release, packages of module
// github.com/nsqio/nsq ("apps/nsqd", "bench/bench_writer"), from the Go
// module proxy into dir. It needs the Go toolchain. NSQ's go.mod replaces
// a dependency, which 'go install module@version' refuses, so the build
// goes through a module of its own, made in a temporary directory beside
// dir, that makes the same replacement.
func Build(ctx context.Context, dir string, pkgs ...string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: the Go toolchain is needed to build NSQ %s from the Go module proxy: install Go, or put its %s binaries in %s",
			local.ErrPrerequisite, Version, strings.Join(pkgs, ", "), dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	build, err := os.MkdirTemp(filepath.Dir(dir), "nsq-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(build)
	steps := [][]string{
		{"mod", "init", "brokerbench.local/nsqbuild"},
		{"mod", "edit", "-replace", goSvc},
		{"get", "github.com/nsqio/nsq@v" + Version},
	}
	for _, pkg := range pkgs {
		steps = append(steps, []string{"install", "github.com/nsqio/nsq/" + pkg})
	}
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, goTool, args...)
		cmd.Dir = build
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build NSQ %s: go %s: %w\n%s", Version, strings.Join(args, " "), err, local.LastLines(string(out), 20))
		}
	}
	return nil
}

// Layout implements local.Kind: one nsqd on 127.0.0.1; or the
// nsqlookupd node (id 101, on 127.0.2.1), first as it starts first, then
// nsqd node i on 127.0.1.i. An nsqd's TCP port is the cluster's client
// port; its HTTP API, its HTTPS API when secured, and nsqlookupd's
// listeners, are on ports of their own.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	var nodes []*local.Node
	if c.Brokers > 1 {
		nodes = append(nodes, &local.Node{ID: lookupdNodeID, Roles: []string{roleLookupd}, Host: local.LoopbackHost(false, true, 1),
			Ports: map[string]int{"lookupd-tcp": 0, "lookupd-http": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", lookupdNodeID))})
	}
	for i := 1; i <= c.Brokers; i++ {
		n := &local.Node{ID: i, Roles: []string{roleNSQD}, Host: local.LoopbackHost(c.Brokers == 1, false, i),
			Ports: map[string]int{"client": 0, "http": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		if c.Serving("tls") {
			n.Ports[httpsPort] = 0
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// lookupdNode is the nsqlookupd node among nodes, or nil.
func lookupdNode(nodes []*local.Node) *local.Node {
	for _, n := range nodes {
		if n.HasRole(roleLookupd) {
			return n
		}
	}
	return nil
}

// Configure implements local.Kind: nsqd takes its settings as flags
// (Command), and its data directory is made here; nsqlookupd, which
// keeps nothing on disk, reads its listeners from a config file in its
// node's directory.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	for _, n := range c.Nodes() {
		if !n.HasRole(roleLookupd) {
			if err := os.MkdirAll(filepath.Join(n.Dir, "data"), 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(n.ConfigFile("nsqlookupd.cfg"), []byte(lookupdConfig(c, n)), 0o644); err != nil {
			return fmt.Errorf("write node %d config: %w", n.ID, err)
		}
	}
	return nil
}

// lookupdConfig is the config file of the nsqlookupd node n: its
// listeners on its own address, which it gives as its own.
func lookupdConfig(c *local.Cluster, n *local.Node) string {
	return fmt.Sprintf("# Written by brokerbench: the nsqlookupd of a local NSQ cluster of %d nsqd nodes.\n"+
		"tcp_address = %q\nhttp_address = %q\nbroadcast_address = %q\n", c.Brokers, n.Addr("lookupd-tcp"), n.Addr("lookupd-http"), n.Host)
}

// MetricsURL implements local.Metered: an nsqd's statistics, as JSON;
// none for nsqlookupd, which handles no message, nor for a secured
// nsqd, which answers only clients with a certificate, which brokerbench's
// metrics reader does not present.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	if _, ok := secured(c); n.HasRole(roleLookupd) || ok {
		return ""
	}
	return "http://" + n.Addr("http") + "/stats?format=json"
}

// Command implements local.Kind: nsqlookupd with its node's config; an
// nsqd with its data directory, its listeners, the address it gives
// clients (its own, as it would otherwise give its host name), and in a
// cluster the nsqlookupd it registers with.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	if n.HasRole(roleLookupd) {
		return []string{binary(c.CacheDir, "nsqlookupd"), "--config=" + n.ConfigFile("nsqlookupd.cfg")}
	}
	return nsqdCommand(c, n, lookupdNode(c.Nodes()))
}

// nsqdCommand is the command line of the nsqd node n, registered with
// the nsqlookupd node lookupd unless it is nil. Secured, it serves its
// HTTPS API too and takes TLS clients alone, with a certificate of the
// cluster's authority (see Listeners); its key and certificate chain
// are in one PEM file, from which nsqd reads each.
func nsqdCommand(c *local.Cluster, n, lookupd *local.Node) []string {
	argv := []string{binary(c.CacheDir, "nsqd"), "--data-path=" + filepath.Join(n.Dir, "data"),
		"--tcp-address=" + n.Addr("client"), "--http-address=" + n.Addr("http"), "--broadcast-address=" + n.Host}
	if sec, ok := secured(c); ok {
		argv = append(argv, "--https-address="+n.Addr(httpsPort), "--tls-cert="+sec.NodeKeyStore(n), "--tls-key="+sec.NodeKeyStore(n),
			"--tls-root-ca-file="+sec.CAFile, "--tls-client-auth-policy=require-verify", "--tls-required=true", "--tls-min-version=tls1.2")
	}
	if lookupd != nil {
		argv = append(argv, "--lookupd-tcp-address="+lookupd.Addr("lookupd-tcp"))
	}
	return argv
}

// NodeReady implements local.StartInOrder: nsqlookupd serves once it
// answers /ping, before any nsqd starts (an nsqd that finds no
// nsqlookupd tries again only at its next 15 s heartbeat). An nsqd is
// not waited for: Ready waits for them all.
func (Kind) NodeReady(ctx context.Context, c *local.Cluster, n *local.Node) error {
	if !n.HasRole(roleLookupd) {
		return nil
	}
	return ping(ctx, http.DefaultClient, "nsqlookupd", "http://"+n.Addr("lookupd-http"))
}

// Ready implements local.Kind: every nsqd answers /ping (secured, on
// its HTTPS API, to the cluster's client certificate), and in a cluster
// nsqlookupd knows every nsqd (which an nsqd started before it registers
// with at its next heartbeat, up to 15 s later).
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	hc, scheme, port := http.DefaultClient, "http", "http"
	if sec, ok := secured(c); ok {
		cfg, err := clientTLS(sec)
		if err != nil {
			return err
		}
		hc, scheme, port = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}, "https", httpsPort
		defer hc.CloseIdleConnections()
	}
	var want []string
	for _, n := range c.Nodes() {
		if n.HasRole(roleNSQD) {
			if err := ping(ctx, hc, fmt.Sprintf("nsqd node %d", n.ID), scheme+"://"+n.Addr(port)); err != nil {
				return err
			}
			want = append(want, n.Addr("client"))
		}
	}
	l := lookupdNode(c.Nodes())
	if l == nil {
		return nil
	}
	known, err := lookupdNodes(ctx, http.DefaultClient, l.Addr("lookupd-http"))
	if err != nil {
		return err
	}
	var missing []string
	for _, addr := range want {
		if !known[addr] {
			missing = append(missing, addr)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("nsqlookupd knows %d of %d nsqd nodes: not yet %s", len(want)-len(missing), len(want), strings.Join(missing, ", "))
	}
	return nil
}

// clientTLS is the TLS of a client of the secured cluster whose
// credentials are sec: its authority trusted, its client certificate
// presented.
func clientTLS(sec *local.Security) (*tls.Config, error) {
	roots, err := pki.ReadPool(sec.CAFile)
	if err != nil {
		return nil, err
	}
	cert, err := pki.ReadKeyStore(sec.ClientKeyStore, pki.TypePEM, "", "")
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, Certificates: []tls.Certificate{cert}}, nil
}

// ping returns nil once what ("nsqd node 2") answers /ping at base
// ("http://127.0.0.1:4151"), asked with hc.
func ping(ctx context.Context, hc *http.Client, what, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/ping", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s /ping: %s", what, resp.Status)
	}
	return nil
}

// lookupdNodes returns the TCP addresses (broadcast address and TCP
// port) of the nsqd nodes registered with the nsqlookupd whose HTTP API
// is at addr.
func lookupdNodes(ctx context.Context, hc *http.Client, addr string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/nodes", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("nsqlookupd at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("nsqlookupd at %s /nodes: %s", addr, resp.Status)
	}
	known, err := parseLookupdNodes(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("nsqlookupd at %s /nodes: %w", addr, err)
	}
	return known, nil
}

// parseLookupdNodes reads nsqlookupd's answer to /nodes: the TCP
// addresses (broadcast address and TCP port) of the nsqd nodes it
// lists.
func parseLookupdNodes(r io.Reader) (map[string]bool, error) {
	var nodes struct {
		Producers []struct {
			BroadcastAddress string `json:"broadcast_address"`
			TCPPort          int    `json:"tcp_port"`
		} `json:"producers"`
	}
	if err := json.NewDecoder(r).Decode(&nodes); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, p := range nodes.Producers {
		known[net.JoinHostPort(p.BroadcastAddress, strconv.Itoa(p.TCPPort))] = true
	}
	return known, nil
}
