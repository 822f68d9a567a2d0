package rabbitmq

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/pki"
)

// NewLocal returns a local RabbitMQ node on port (AMQP), with default
// directories ("rabbitmq-PORT" under the state directory).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("rabbitmq-%d", port)),
		Port: port, Brokers: brokers}
}

// Kind is the local.Kind of RabbitMQ clusters from the machine's package
// (Debian's rabbitmq-server), with the stream and AMQP 1.0 plugins: AMQP
// 0-9-1 and 1.0 on the client port, the stream protocol on its own port. Each node's Erlang VM
// runs in the foreground as the node's process; the nodes of a cluster
// find each other through classic peer discovery, one after another. The
// epmd daemon the first node starts listens on the nodes' addresses, on a
// port of the cluster's own, and is stopped with the cluster
// (local.Node.stopForked).
type Kind struct{}

// rabbitmqHome is where Debian's package puts the server.
const rabbitmqHome = "/usr/lib/rabbitmq"

// Name implements local.Kind.
func (Kind) Name() string { return "rabbitmq" }

// Product implements local.Kind.
func (Kind) Product() string { return "RabbitMQ" }

// Version implements local.Kind: the installed release's, from its directory.
func (Kind) Version() string {
	dirs, _ := filepath.Glob(filepath.Join(rabbitmqHome, "lib", "rabbitmq_server-*"))
	if len(dirs) == 0 {
		return "not installed"
	}
	return strings.TrimPrefix(filepath.Base(dirs[len(dirs)-1]), "rabbitmq_server-")
}

func rabbitmqServer() (string, error) {
	bin := filepath.Join(rabbitmqHome, "bin", "rabbitmq-server")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: RabbitMQ is not installed (no %s): install it (Debian: apt-get install rabbitmq-server; the package starts no service here)", local.ErrPrerequisite, bin)
	}
	return bin, nil
}

// Install installs Debian's rabbitmq-server package when it is missing and
// brokerbench runs as root with apt-get; otherwise it says what to run.
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	return local.AptInstall(ctx, "rabbitmq-server", rabbitmqServer, logf)
}

// Listeners implements local.Securer: AMQP, and AMQP over TLS on a port of its
// own (which also takes the EXTERNAL mechanism: a client certificate
// whose common name is a user); with amqps, the stream protocol over TLS
// is served too ("stream_tls").
func (Kind) Listeners() []string { return []string{"amqp", "amqps"} }

// OpenListeners implements local.Securer: AMQP and streams without TLS,
// which a secured node serves to its default user, guest, as an
// unsecured one does (see secure): a client logs in without the
// cluster's password.
func (Kind) OpenListeners() []string { return []string{"amqp", "stream"} }

// Layout implements local.Kind: node i on the cluster's loopback address, with
// listeners for AMQP ("client"), streams, Erlang distribution and the
// Prometheus plugin's metrics; the first node also has the port of the
// cluster's epmd.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	var nodes []*local.Node
	for i := 1; i <= c.Brokers; i++ {
		n := &local.Node{ID: i, Roles: []string{"broker"}, Host: local.LoopbackHost(c.Brokers == 1, false, i),
			Ports: map[string]int{"stream": 0, "dist": 0, "metrics": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		for _, l := range c.ServedListeners() {
			n.Ports[c.ListenerKey(l)] = 0
		}
		if c.Serving("amqps") {
			n.Ports["stream_tls"] = 0 // streams over TLS, beside amqps
		}
		if i == 1 {
			n.Ports["epmd"] = 0
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// Configure implements local.Kind: each node's rabbitmq.conf (with the other
// nodes as its peers, in a cluster), its plugins, and the cluster's
// Erlang cookie in its home directory.
func (k Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	for _, n := range c.Nodes() {
		if err := k.configureNode(c, n); err != nil {
			return fmt.Errorf("configure node %d: %w", n.ID, err)
		}
	}
	return nil
}

func (k Kind) configureNode(c *local.Cluster, n *local.Node) error {
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by brokerbench: node %d of %d.
%s
stream.listeners.tcp.default = %s
# Stream clients connect to the host and port a stream's leader
# advertises: the node's own.
stream.advertised_host = %s
stream.advertised_port = %d
# Clients connect over loopback only; the default user may do so.
loopback_users = none
# The Prometheus plugin's endpoint, read during runs: totals of the
# whole node (per-object metrics would cost a scrape per queue).
prometheus.tcp.ip = %[7]s
prometheus.tcp.port = %[8]d
prometheus.return_per_object_metrics = false
log.file.level = warning
log.console = false
# A run's backlog may be large: queue memory up to 40%% of RAM (the
# default), and no disk alarm below 1 GB free.
disk_free_limit.absolute = 1GB
`, n.ID, len(c.Nodes()), amqpListener(c, n), n.Addr("stream"), n.Host, n.Ports["stream"], n.Host, n.Ports["metrics"])
	if len(c.Nodes()) > 1 {
		// The nodes start in order (local.StartInOrder): each joins those
		// already running.
		b.WriteString("cluster_formation.peer_discovery_backend = classic_config\n")
		for i, peer := range c.Nodes() {
			fmt.Fprintf(&b, "cluster_formation.classic_config.nodes.%d = %s\n", i+1, k.nodeName(c, peer))
		}
	}
	// The AMQP 1.0 plugin serves AMQP 1.0 on the AMQP listeners, beside
	// AMQP 0-9-1 (the rabbitmq-amqp10 driver).
	plugins := "rabbitmq_stream,rabbitmq_amqp1_0,rabbitmq_prometheus"
	if sec := c.Security(); sec != nil {
		plugins += ",rabbitmq_auth_mechanism_ssl"
		if err := k.secure(c, n, sec, &b); err != nil {
			return err
		}
	}
	files := map[string]string{"rabbitmq.conf": b.String(), "enabled_plugins": "[" + plugins + "].\n", "rabbitmq-env.conf": "# Written by brokerbench: settings come from the environment.\n"}
	for name, content := range files {
		if err := os.WriteFile(n.ConfigFile(name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	cookie := filepath.Join(n.Dir, ".erlang.cookie")
	_ = os.Remove(cookie)
	// Erlang refuses a cookie file others can read. Every node of the
	// cluster has the same, made from the cluster's id.
	return os.WriteFile(cookie, []byte(strings.NewReplacer("-", "x", "_", "y").Replace(c.ID)), 0o400)
}

// secure adds a secured node's TLS listener and users to its config: the
// definitions it loads at boot hold guest (as without security) and
// brokerbench's user, with its password hashed as RabbitMQ hashes them.
func (Kind) secure(c *local.Cluster, n *local.Node, sec *local.Security, b *strings.Builder) error {
	pw, err := sec.Password()
	if err != nil {
		return err
	}
	if c.Serving("amqps") {
		fmt.Fprintf(b, `listeners.ssl.default = %s
ssl_options.cacertfile = %s
ssl_options.certfile = %s
ssl_options.keyfile = %[3]s
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
stream.listeners.ssl.default = %s
stream.advertised_tls_host = %s
stream.advertised_tls_port = %d
`, n.Addr(c.ListenerKey("amqps")), sec.CAFile, sec.NodeKeyStore(n), n.Addr("stream_tls"), n.Host, n.Ports["stream_tls"])
	}
	fmt.Fprintf(b, "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\nauth_mechanisms.3 = EXTERNAL\nssl_cert_login_from = common_name\nload_definitions = %s\n", n.ConfigFile("definitions.json"))
	type user struct {
		Name      string   `json:"name"`
		Hash      string   `json:"password_hash"`
		Algorithm string   `json:"hashing_algorithm"`
		Tags      []string `json:"tags"`
	}
	type permission struct {
		User      string `json:"user"`
		VHost     string `json:"vhost"`
		Configure string `json:"configure"`
		Write     string `json:"write"`
		Read      string `json:"read"`
	}
	defs := map[string]any{
		"users":       []user{},
		"vhosts":      []map[string]string{{"name": "/"}},
		"permissions": []permission{},
	}
	for name, password := range map[string]string{"guest": "guest", local.Username: pw} {
		defs["users"] = append(defs["users"].([]user), user{name, rabbitHash(password), "rabbit_password_hashing_sha256", []string{"administrator"}})
		defs["permissions"] = append(defs["permissions"].([]permission), permission{name, "/", ".*", ".*", ".*"})
	}
	data, err := json.Marshal(defs)
	if err != nil {
		return err
	}
	return os.WriteFile(n.ConfigFile("definitions.json"), data, 0o600)
}

// rabbitHash is password hashed as RabbitMQ's SHA-256 scheme does: a
// random 4-byte salt, then SHA-256 of salt and password, in base64.
func rabbitHash(password string) string {
	salt := make([]byte, 4)
	_, _ = rand.Read(salt)
	sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
	return base64.StdEncoding.EncodeToString(append(salt, sum[:]...))
}

// amqpListener is the config line of a node's plain AMQP listener.
func amqpListener(c *local.Cluster, n *local.Node) string {
	if !c.Serving("amqp") {
		return "listeners.tcp = none"
	}
	return "listeners.tcp.default = " + n.Addr(c.ListenerKey("amqp"))
}

// nodeName is the node's Erlang name: a long name with the node's own
// address, which needs no resolver, unique per cluster port.
func (Kind) nodeName(c *local.Cluster, n *local.Node) string {
	return fmt.Sprintf("bb%d-%d@%s", c.Port, n.ID, n.Host)
}

// Command implements local.Kind: the package's start script, which execs the
// Erlang VM (RABBITMQ_ALLOW_INPUT, see Environ) so that the node's PID
// stays the VM's. Arguments after the script's own go to the VM: no
// shell, and the node's directory as a marker.
func (k Kind) Command(c *local.Cluster, n *local.Node) []string {
	bin, err := rabbitmqServer()
	if err != nil {
		bin = "rabbitmq-server"
	}
	return []string{bin, "-noinput", "-brokerbench_node", n.Marker()}
}

// Environ implements local.Environer: RabbitMQ takes its paths, node name and
// ports from the environment.
func (k Kind) Environ(c *local.Cluster, n *local.Node) []string {
	host := net.ParseIP(n.Host).To4()
	var hosts []string
	for _, peer := range c.Nodes() {
		hosts = append(hosts, peer.Host)
	}
	return []string{
		"HOME=" + n.Dir,
		"RABBITMQ_NODENAME=" + k.nodeName(c, n),
		"RABBITMQ_USE_LONGNAME=true",
		"RABBITMQ_CONFIG_FILE=" + n.ConfigFile("rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + n.ConfigFile("advanced.config"),
		"RABBITMQ_CONF_ENV_FILE=" + n.ConfigFile("rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + n.ConfigFile("enabled_plugins"),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(n.Dir, "data"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(n.Dir, "log"),
		"RABBITMQ_NODE_IP_ADDRESS=" + n.Host,
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", n.Ports["dist"]),
		// One epmd for the cluster, started by whichever node starts
		// first, on every node's address: a node finds a peer's
		// distribution port by asking at the peer's address.
		fmt.Sprintf("ERL_EPMD_PORT=%d", c.Nodes()[0].Ports["epmd"]),
		"ERL_EPMD_ADDRESS=" + strings.Join(hosts, ","),
		// Erlang distribution listens on the node's address only.
		fmt.Sprintf("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {%d,%d,%d,%d}", host[0], host[1], host[2], host[3]),
		"RABBITMQ_ALLOW_INPUT=true",
	}
}

// Ready implements local.Kind: every node serves, and, in a cluster, every
// node is a member: a probe stream gets a copy on each.
func (k Kind) Ready(ctx context.Context, c *local.Cluster) error {
	for _, n := range c.Nodes() {
		if err := k.NodeReady(ctx, c, n); err != nil {
			return err
		}
	}
	if len(c.Nodes()) == 1 {
		return nil
	}
	n := c.Nodes()[0]
	env, err := stream.NewEnvironment(stream.NewEnvironmentOptions().SetUri(fmt.Sprintf("rabbitmq-stream://guest:guest@%s/%%2f", n.Addr("stream"))))
	if err != nil {
		return fmt.Errorf("node %d streams: %w", n.ID, err)
	}
	defer env.Close()
	const probe = "brokerbench-cluster-probe"
	if err := env.DeclareStream(probe, &stream.StreamOptions{}); err != nil && !errors.Is(err, stream.StreamAlreadyExists) {
		return fmt.Errorf("probe stream: %w", err)
	}
	defer env.DeleteStream(probe)
	md, err := env.StreamMetaData(probe)
	if err != nil {
		return fmt.Errorf("probe stream: %w", err)
	}
	if copies := 1 + len(md.Replicas); copies != len(c.Nodes()) {
		return fmt.Errorf("the nodes did not form one cluster: a new stream has %d copies, not %d (see the nodes' logs)", copies, len(c.Nodes()))
	}
	return nil
}

// NodeReady implements local.StartInOrder: the node takes AMQP connections
// (with the default user) and its stream listener accepts. A node opens
// its listeners only after it joined its peers.
func (Kind) NodeReady(ctx context.Context, c *local.Cluster, n *local.Node) error {
	uri, cfg := "amqp://guest:guest@"+n.Addr(c.ListenerKey("amqp"))+"/", amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)}
	if !c.Serving("amqp") {
		pool, err := pki.ReadPool(c.Security().CAFile)
		if err != nil {
			return err
		}
		uri, cfg.TLSClientConfig = "amqps://guest:guest@"+n.Addr("client")+"/", &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	conn, err := amqp.DialConfig(uri, cfg)
	if err != nil {
		return fmt.Errorf("node %d AMQP: %w", n.ID, err)
	}
	_ = conn.Close()
	d := net.Dialer{Timeout: 2 * time.Second}
	sc, err := d.DialContext(ctx, "tcp", n.Addr("stream"))
	if err != nil {
		return fmt.Errorf("node %d streams: %w", n.ID, err)
	}
	return sc.Close()
}
