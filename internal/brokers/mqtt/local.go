package mqtt

import (
	"context"
	"fmt"
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

// Layout implements local.Kind: one server, its clients on one port.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	return []*local.Node{{ID: 1, Roles: []string{"broker"}, Host: local.LoopbackHost(true, false, 1),
		Ports: map[string]int{"client": 0}, Dir: filepath.Join(c.StateDir, "node-1")}}
}

// Configure implements local.Kind: the one server's config (its module
// declares one node and no links, so package brokers refuses more before
// a cluster starts).
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	n := c.Nodes()[0]
	data := filepath.Join(n.Dir, "data") + string(filepath.Separator)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by brokerbench.\nper_listener_settings false\nlistener %d %s\nprotocol mqtt\nallow_anonymous true\n", n.Ports["client"], n.Host)
	fmt.Fprintf(&b, "persistence true\npersistence_location %s\nautosave_interval 60\nlog_dest stdout\nsys_interval 1\n", data)
	b.WriteString("max_queued_messages 1000000\nmax_inflight_messages 0\n")
	if os.Geteuid() == 0 {
		// Run as root, Mosquitto would switch to the mosquitto user,
		// who cannot write the data directory root made.
		b.WriteString("user root\n")
	}
	return os.WriteFile(n.ConfigFile("mosquitto.conf"), []byte(b.String()), 0o644)
}

// MetricsURL implements local.Metered: the server itself, read on its
// $SYS topics.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	return "mqtt://" + n.Addr("client")
}

// Command implements local.Kind.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	bin, err := mosquittoBinary()
	if err != nil {
		bin = "mosquitto"
	}
	return []string{bin, "-c", n.ConfigFile("mosquitto.conf")}
}

// Ready implements local.Kind: the server accepts an MQTT 5 connection.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	d, err := New(&workload.DriverConfig{Name: "mqtt", Source: "local"}, driver.Options{Endpoints: []string{c.Nodes()[0].Addr("client")}})
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
