package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/pki"
)

// NewLocal returns a local Redis server on port, with default directories
// ("redis-PORT" under the state directory).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("redis-%d", port)),
		Port: port, Brokers: brokers}
}

// Kind is the local.Kind of a single Redis server, from the machine's package
// (Debian's redis-server). Its append-only file is written with
// appendfsync everysec, which, like Kafka's default, leaves the fsync to
// the system within a second; no RDB snapshots.
type Kind struct{}

// Name implements local.Kind.
func (Kind) Name() string { return "redis" }

// Product implements local.Kind.
func (Kind) Product() string { return "Redis" }

// Version implements local.Kind: the installed server's, read from it.
func (Kind) Version() string {
	bin, err := redisBinary()
	if err != nil {
		return "not installed"
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "unknown"
}

func redisBinary() (string, error) {
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return bin, nil
	}
	const debian = "/usr/bin/redis-server"
	if _, err := os.Stat(debian); err == nil {
		return debian, nil
	}
	return "", fmt.Errorf("%w: redis-server is not installed: install it (Debian: apt-get install redis-server)", local.ErrPrerequisite)
}

// Install installs Debian's redis-server package when it is missing and
// brokerbench runs as root with apt-get; otherwise it says what to run.
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	return local.AptInstall(ctx, "redis-server", redisBinary, logf)
}

// Listeners implements local.Securer: plain connections, and TLS on a port of
// its own.
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// OpenListeners implements local.Securer: the plain listener, where the
// default user stays open to clients without a password (see
// Configure).
func (Kind) OpenListeners() []string { return []string{"plain"} }

// Layout implements local.Kind: one server, with a port per listener. Redis
// replicas and Redis local.Cluster are not run locally yet.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	n := &local.Node{ID: 1, Roles: []string{"broker"}, Host: local.LoopbackHost(true, false, 1),
		Ports: map[string]int{}, Dir: filepath.Join(c.StateDir, "node-1")}
	for _, l := range c.ServedListeners() {
		n.Ports[c.ListenerKey(l)] = 0
	}
	return []*local.Node{n}
}

// Configure implements local.Kind: the one server's config (its module
// declares one node and no links, so package brokers refuses more before
// a cluster starts).
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	n := c.Nodes()[0]
	// set-proc-title no keeps the command line, with the config's path in
	// the node's directory, by which brokerbench knows its process.
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by brokerbench.\nbind %s\ndir %s\nsave \"\"\nappendonly yes\nappendfsync everysec\nprotected-mode yes\ndaemonize no\nset-proc-title no\n",
		n.Host, filepath.Join(n.Dir, "data"))
	if c.Serving("plain") {
		fmt.Fprintf(&b, "port %d\n", n.Ports[c.ListenerKey("plain")])
	} else {
		b.WriteString("port 0\n")
	}
	if sec := c.Security(); sec != nil {
		pw, err := sec.Password()
		if err != nil {
			return err
		}
		// The default user stays open to plain clients; brokerbench's
		// user needs its password.
		fmt.Fprintf(&b, "user %s on >%s ~* &* +@all\n", local.Username, pw)
		if c.Serving("tls") {
			fmt.Fprintf(&b, "tls-port %d\ntls-cert-file %s\ntls-key-file %[2]s\ntls-ca-cert-file %s\ntls-auth-clients optional\n",
				n.Ports[c.ListenerKey("tls")], sec.NodeKeyStore(n), sec.CAFile)
		}
	}
	if err := os.MkdirAll(filepath.Join(n.Dir, "data"), 0o755); err != nil {
		return err
	}
	// A secured server's config holds its user's password.
	return os.WriteFile(n.ConfigFile("redis.conf"), []byte(b.String()), 0o600)
}

// MetricsURL implements local.Metered: the server itself, read with INFO on
// its plain listener.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	if !c.Serving("plain") {
		return ""
	}
	return "redis://" + n.Addr(c.ListenerKey("plain"))
}

// Command implements local.Kind.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	bin, err := redisBinary()
	if err != nil {
		bin = "redis-server"
	}
	return []string{bin, n.ConfigFile("redis.conf")}
}

// Ready implements local.Kind: the server answers PING, over TLS when that is
// its only listener.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	opts := &goredis.Options{Addr: c.Nodes()[0].Addr(c.ListenerKey("plain")), MaxRetries: -1}
	if !c.Serving("plain") {
		opts.Addr = c.Nodes()[0].Addr("client")
		pool, err := pki.ReadPool(c.Security().CAFile)
		if err != nil {
			return err
		}
		opts.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}
