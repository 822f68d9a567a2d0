package mqtt

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/eclipse/paho.golang/paho"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// NewLocal returns a local Mosquitto server on port, with default
// directories ("mosquitto-PORT" under the state directory).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("mosquitto-%d", port)),
		Port: port, Brokers: brokers}
}

// Kind is the local.Kind of a single Eclipse Mosquitto server, from the
// machine's package (Debian's mosquitto). It persists its sessions,
// subscriptions and queued messages to its data directory every minute
// and when it stops; it queues up to a million QoS 1 and 2 messages per
// session and bounds no client's messages in flight. It publishes $SYS
// every second.
//
// Unsecured, it lets clients in anonymously. Secured (its listeners
// "plain" and "tls"), every listener asks for the user brokerbench and
// the cluster's password, from a password file made with
// mosquitto_passwd, and the "tls" listener serves TLS with the node's
// certificate.
//
// Debian's package may start a mosquitto service of its own on port
// 1883: brokerbench's server is another process, on a port found free,
// and brokerbench neither uses nor stops that service.
type Kind struct{}

// Name implements local.Kind.
func (Kind) Name() string { return "mosquitto" }

// Product implements local.Kind.
func (Kind) Product() string { return "Eclipse Mosquitto" }

// Version implements local.Kind: the installed server's, read from its
// help text ("mosquitto version 2.0.11").
func (Kind) Version() string {
	bin, err := mosquittoBinary()
	if err != nil {
		return "not installed"
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput() // exits 3 after printing its help
	first, _, _ := strings.Cut(string(out), "\n")
	if v, ok := strings.CutPrefix(strings.TrimSpace(first), "mosquitto version "); ok {
		return v
	}
	return "unknown"
}

func mosquittoBinary() (string, error) {
	if bin, err := exec.LookPath("mosquitto"); err == nil {
		return bin, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: mosquitto is not installed: install it (Debian: apt-get install mosquitto)", local.ErrPrerequisite)
}

// Install installs Debian's mosquitto package when it is missing and
// brokerbench runs as root with apt-get; otherwise it says what to run.
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	return local.AptInstall(ctx, "mosquitto", mosquittoBinary, logf)
}

// Listeners implements local.Securer: plain connections, and TLS on a
// port of its own.
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// OpenListeners implements local.Securer: none, since a secured server
// refuses anonymous clients on every listener and asks for the user's
// password (per_listener_settings false, allow_anonymous false and a
// password_file; see Configure).
func (Kind) OpenListeners() []string { return nil }

// Layout implements local.Kind: one server, with a port per listener.
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
// a cluster starts), and, secured, its password file.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	n := c.Nodes()[0]
	data := filepath.Join(n.Dir, "data") + string(filepath.Separator)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Written by brokerbench.\nper_listener_settings false\n")
	if c.Serving("plain") {
		fmt.Fprintf(&b, "listener %d %s\nprotocol mqtt\n", n.Ports[c.ListenerKey("plain")], n.Host)
	}
	if sec := c.Security(); sec == nil {
		b.WriteString("allow_anonymous true\n")
	} else {
		if c.Serving("tls") {
			// The key store holds the key and the chain; Mosquitto reads
			// the certificates of the one and the key of the other.
			fmt.Fprintf(&b, "listener %d %s\nprotocol mqtt\ncertfile %s\nkeyfile %[3]s\n", n.Ports[c.ListenerKey("tls")], n.Host, sec.NodeKeyStore(n))
		}
		passwd := n.ConfigFile("passwd")
		if err := writePasswordFile(ctx, passwd, sec); err != nil {
			return err
		}
		fmt.Fprintf(&b, "allow_anonymous false\npassword_file %s\n", passwd)
	}
	fmt.Fprintf(&b, "persistence true\npersistence_location %s\nautosave_interval 60\nlog_dest stdout\nsys_interval 1\n", data)
	b.WriteString("max_queued_messages 1000000\nmax_inflight_messages 0\n")
	if os.Geteuid() == 0 {
		// Run as root, Mosquitto would switch to the mosquitto user,
		// who cannot write the data directory root made.
		b.WriteString("user root\n")
	}
	return os.WriteFile(n.ConfigFile("mosquitto.conf"), []byte(b.String()), 0o644)
}

// writePasswordFile writes Mosquitto's password file for the secured
// cluster's user: the password in plain text, readable by its owner
// alone, then hashed in place by mosquitto_passwd -U, so that the
// password is on no command line.
func writePasswordFile(ctx context.Context, file string, sec *local.Security) error {
	pw, err := sec.Password()
	if err != nil {
		return err
	}
	tool, err := passwdTool()
	if err != nil {
		return err
	}
	_ = os.Remove(file) // a file left by an earlier start keeps its mode on WriteFile
	if err := os.WriteFile(file, []byte(sec.Username+":"+pw+"\n"), 0o600); err != nil {
		return fmt.Errorf("write Mosquitto's password file: %w", err)
	}
	if out, err := exec.CommandContext(ctx, tool, "-U", file).CombinedOutput(); err != nil {
		_ = os.Remove(file)
		return fmt.Errorf("hash Mosquitto's password file %s with %s -U: %w\n%s", file, tool, err, local.LastLines(string(out), 10))
	}
	return nil
}

// passwdTool returns mosquitto_passwd, which Debian's mosquitto package
// installs beside the server.
func passwdTool() (string, error) {
	if bin, err := exec.LookPath("mosquitto_passwd"); err == nil {
		return bin, nil
	}
	const debian = "/usr/bin/mosquitto_passwd"
	if _, err := os.Stat(debian); err == nil {
		return debian, nil
	}
	return "", fmt.Errorf("%w: mosquitto_passwd, which makes a secured Mosquitto's password file, is not installed: install it (Debian: apt-get install mosquitto)", local.ErrPrerequisite)
}

// MetricsURL implements local.Metered: the server itself, read on its
// $SYS topics over its client port; secured, as the cluster's user with
// the password in the cluster's password file (see readSys), over TLS
// when that port serves TLS.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	sec := c.Security()
	if sec == nil {
		return "mqtt://" + n.Addr("client")
	}
	u := url.URL{Scheme: "mqtt", User: url.User(sec.Username), Host: n.Addr("client")}
	q := url.Values{"passwordFile": {sec.PasswordFile}}
	if !c.Serving("plain") {
		u.Scheme = "mqtts"
		q.Set("caFile", sec.CAFile)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Command implements local.Kind.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	bin, err := mosquittoBinary()
	if err != nil {
		bin = "mosquitto"
	}
	return []string{bin, "-c", n.ConfigFile("mosquitto.conf")}
}

// Ready implements local.Kind: the server accepts an MQTT 5 connection
// on its client port, secured with the cluster's user and password.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	opts := driver.Options{Endpoints: []string{"mqtt://" + c.Nodes()[0].Addr("client")}}
	if sec := c.Security(); sec != nil {
		pw, err := sec.Password()
		if err != nil {
			return err
		}
		opts.Credentials = &driver.Credentials{CAFile: sec.CAFile, Username: sec.Username, Password: pw}
		if !c.Serving("plain") {
			opts.Endpoints = []string{"mqtts://" + c.Nodes()[0].Addr("client")}
		}
	}
	d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "local"}, opts)
	if err != nil {
		return err
	}
	s, err := d.(*Driver).connect(ctx, "ready", nil, nil, paho.ClientConfig{})
	if err != nil {
		return err
	}
	s.close()
	return nil
}
