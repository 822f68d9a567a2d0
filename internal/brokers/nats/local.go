package nats

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/brokerbench/brokerbench/internal/local"
)

// Version is the NATS server release brokerbench builds and runs unless
// asked for another (Kind.Release).
const Version = "2.15.2"

// oldestRelease is the oldest nats-server release a local cluster runs:
// the config brokerbench writes was checked to start 2.10.27, 2.11.17
// and 2.15.2.
const oldestRelease = "2.10"

// NewLocal returns a local NATS cluster with JetStream of brokers nodes, its
// clients on port, with default directories ("nats-PORT" under the state
// directory).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("nats-%d", port)),
		Port: port, Brokers: brokers}
}

// Kind is the local.Kind of NATS server clusters with JetStream: every node is a
// JetStream server; with more than one, they form a cluster over routes
// and replicate streams (Raft).
type Kind struct {
	// ReleaseVersion is the nats-server release built and run, each in a
	// directory of its own in the cache; empty: Version.
	ReleaseVersion string
}

// Name implements local.Kind.
func (Kind) Name() string { return "nats" }

// Product implements local.Kind.
func (Kind) Product() string { return "NATS Server" }

// Version implements local.Kind.
func (k Kind) Version() string {
	if k.ReleaseVersion == "" {
		return Version
	}
	return k.ReleaseVersion
}

// Release implements local.Releaser: any nats-server release from 2.10.0
// on that the Go module proxy serves ("2.11.17"); whether it does is
// known when it is built.
func (k Kind) Release(version string) (local.Kind, error) {
	if err := local.CheckRelease("nats-server", version, oldestRelease, "the JetStream config written"); err != nil {
		return nil, err
	}
	k.ReleaseVersion = version
	return k, nil
}

// binary is the nats-server executable of the release, under cacheDir.
func (k Kind) binary(cacheDir string) string {
	return filepath.Join(cacheDir, "nats-server-"+k.Version(), "nats-server")
}

// Install builds the nats-server release from the Go module proxy into
// cacheDir, unless already there. It needs the Go toolchain.
func (k Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	bin, version := k.binary(cacheDir), k.Version()
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: the Go toolchain is needed to build nats-server %s from the Go module proxy: install Go, or build it yourself (go install github.com/nats-io/nats-server/v2@v%s) into %s",
			local.ErrPrerequisite, version, version, filepath.Dir(bin))
	}
	logf("building nats-server %s from the Go module proxy into %s (about 30 s on first use)", version, filepath.Dir(bin))
	cmd := exec.CommandContext(ctx, goTool, "install", "github.com/nats-io/nats-server/v2@v"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build nats-server %s: %w\n%s", version, err, local.LastLines(string(out), 20))
	}
	return nil
}

// Listeners implements local.Securer: a secured cluster's client port takes
// TLS with brokerbench's user and password as well as plain connections
// without credentials (nats-server serves both on one port).
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// OpenListeners implements local.Securer: the plain listener, where a
// secured node lets a client without TLS or user in as its anonymous
// user (allow_non_tls, no_auth_user; see Configure).
func (Kind) OpenListeners() []string { return []string{"plain"} }

// Layout implements local.Kind: node i on the cluster's loopback address, with a
// route listener when there are several.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	var nodes []*local.Node
	for i := 1; i <= c.Brokers; i++ {
		n := &local.Node{ID: i, Roles: []string{"broker"}, Host: local.LoopbackHost(c.Brokers == 1, false, i),
			Ports: map[string]int{"client": 0, "metrics": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		if c.Brokers > 1 {
			n.Ports["cluster"] = 0
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// Configure implements local.Kind: each node's server config. Its module
// declares that the nodes cannot have links (NoLinks).
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	for _, n := range c.Nodes() {
		var b strings.Builder
		fmt.Fprintf(&b, "# Written by brokerbench: node %d of a %d-node NATS cluster on loopback.\n", n.ID, c.Brokers)
		fmt.Fprintf(&b, "server_name: n%d\nlisten: %q\nhttp: %q\n", n.ID, n.Addr("client"), n.Addr("metrics"))
		fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 1GB\n  max_file_store: 20GB\n}\n", filepath.Join(n.Dir, "data"))
		if sec := c.Security(); sec != nil {
			pw, err := sec.Password()
			if err != nil {
				return err
			}
			anonymous := make([]byte, 18)
			_, _ = rand.Read(anonymous)
			fmt.Fprintf(&b, "tls {\n  cert_file: %q\n  key_file: %[1]q\n  ca_file: %q\n  verify: false\n}\nallow_non_tls: true\n", sec.NodeKeyStore(n), sec.CAFile)
			fmt.Fprintf(&b, "authorization {\n  users: [\n    {user: %q, password: %q}\n    {user: \"anonymous\", password: %q}\n  ]\n}\nno_auth_user: \"anonymous\"\n",
				local.Username, pw, base64.RawURLEncoding.EncodeToString(anonymous))
		}
		if c.Brokers > 1 {
			var routes []string
			for _, peer := range c.Nodes() {
				if peer != n {
					routes = append(routes, fmt.Sprintf("%q", "nats-route://"+peer.Addr("cluster")))
				}
			}
			fmt.Fprintf(&b, "cluster {\n  name: brokerbench\n  listen: %q\n  routes: [%s]\n}\n", n.Addr("cluster"), strings.Join(routes, ", "))
		}
		// A secured node's config holds its user's password.
		if err := os.WriteFile(n.ConfigFile("nats.conf"), []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("write node %d config: %w", n.ID, err)
		}
	}
	return nil
}

// MetricsURL implements local.Metered: the server's monitoring endpoint.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	if _, ok := n.Ports["metrics"]; !ok {
		return "" // laid out before brokerbench read NATS's figures
	}
	return "http://" + n.Addr("metrics") + "/varz"
}

// Command implements local.Kind.
func (k Kind) Command(c *local.Cluster, n *local.Node) []string {
	return []string{k.binary(c.CacheDir), "-c", n.ConfigFile("nats.conf")}
}

// Ready implements local.Kind: every node answers JetStream requests (in a
// cluster, once the meta leader is elected).
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	for _, addr := range c.Bootstrap() {
		nc, err := nats.Connect("nats://"+addr, nats.Timeout(2*time.Second))
		if err != nil {
			return err
		}
		js, err := jetstream.New(nc)
		if err == nil {
			_, err = js.AccountInfo(ctx)
		}
		nc.Close()
		if err != nil {
			return fmt.Errorf("%s: JetStream not ready: %w", addr, err)
		}
	}
	return nil
}
