package artemis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Version is the ActiveMQ Artemis release brokerbench installs and runs.
const Version = "2.40.0"

// NewLocal returns a local Artemis broker, its AMQP acceptor on port,
// with default directories ("artemis-PORT" under the state directory)
// and a heap of 1024 MB. A local Artemis cluster has one node (the
// module's MaxNodes).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("artemis-%d", port)),
		Port: port, Brokers: brokers, HeapMB: 1024}
}

// Kind is the local.Kind of a single ActiveMQ Artemis broker: an instance
// made by Artemis' own "artemis create" in the node's directory, its
// journal there, without its web console. Its one acceptor per listener
// serves AMQP 1.0 and Artemis' core protocol. Unsecured, it lets clients
// in anonymously (and its user with any password); secured, every
// listener asks for the user's password (SASL PLAIN), and the "tls"
// listener serves TLS with the cluster's certificates.
type Kind struct{}

// Name implements local.Kind.
func (Kind) Name() string { return "artemis" }

// Product implements local.Kind.
func (Kind) Product() string { return "ActiveMQ Artemis" }

// Version implements local.Kind.
func (Kind) Version() string { return Version }

// Listeners implements local.Securer: plain connections, and TLS on a
// port of its own.
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// home is the unpacked Artemis distribution under cacheDir.
func home(cacheDir string) string {
	return filepath.Join(cacheDir, "artemis-"+Version, "apache-artemis-"+Version)
}

// Install downloads the pinned Artemis distribution from Maven Central
// into cacheDir (47 MB) and unpacks it, unless already there. It needs
// Java 17+, Maven and tar.
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	what := "ActiveMQ Artemis " + Version
	if err := local.CheckJava(ctx, what, 17); err != nil {
		return err
	}
	dist := filepath.Dir(home(cacheDir))
	done := filepath.Join(dist, ".complete")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	mvn, err := local.Maven(what)
	if err != nil {
		return err
	}
	logf("installing ActiveMQ Artemis %s from Maven Central into %s (47 MB)", Version, dist)
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "settings.xml"), []byte(local.MavenSettings), 0o644); err != nil {
		return err
	}
	archive := "apache-artemis-" + Version + "-bin.tar.gz"
	steps := [][]string{
		{mvn, "-B", "-q", "-s", "settings.xml", "dependency:copy", "-Dartifact=org.apache.activemq:apache-artemis:" + Version + ":tar.gz:bin", "-DoutputDirectory=."},
		{"tar", "xzf", archive},
	}
	for _, argv := range steps {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dist
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("install %s: %s: %w\n%s", what, filepath.Base(argv[0]), err, local.LastLines(string(out), 20))
		}
	}
	_ = os.Remove(filepath.Join(dist, archive))
	if _, err := os.Stat(filepath.Join(home(cacheDir), "bin", "artemis")); err != nil {
		return fmt.Errorf("the %s archive holds no bin/artemis in %s", what, home(cacheDir))
	}
	return os.WriteFile(done, []byte(Version+"\n"), 0o644)
}

// Layout implements local.Kind: one broker, with a port per listener.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	n := &local.Node{ID: 1, Roles: []string{"broker"}, Host: local.LoopbackHost(true, false, 1),
		Ports: map[string]int{"client": 0}, Dir: filepath.Join(c.StateDir, "node-1")}
	for _, l := range c.ServedListeners() {
		n.Ports[c.ListenerKey(l)] = 0
	}
	return []*local.Node{n}
}

// instance is the broker instance's directory in node n's.
func instance(n *local.Node) string { return filepath.Join(n.Dir, "instance") }

// Configure implements local.Kind: a new node's instance is made by
// "artemis create"; every start then has its acceptors, and its users
// and login, written anew.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	n := c.Nodes()[0]
	etc := filepath.Join(instance(n), "etc")
	if _, err := os.Stat(filepath.Join(etc, "broker.xml")); err != nil {
		// The user and password given here are replaced below.
		cmd := exec.CommandContext(ctx, filepath.Join(home(c.CacheDir), "bin", "artemis"), "create", "--silent", "--force",
			"--user", local.Username, "--password", "unused", "--require-login", "--host", n.Host, "--http-host", n.Host,
			"--no-web", "--no-autotune", instance(n))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("create the Artemis instance of node %d: %w\n%s", n.ID, err, local.LastLines(string(out), 20))
		}
	}
	brokerXML, err := os.ReadFile(filepath.Join(etc, "broker.xml"))
	if err != nil {
		return err
	}
	with := diskLimit(acceptorsRE.ReplaceAllLiteral(brokerXML, []byte(acceptors(c, n))))
	if err := os.WriteFile(filepath.Join(etc, "broker.xml"), with, 0o644); err != nil {
		return err
	}
	return writeLogin(c, etc)
}

// diskLimitRE matches the disk limits of an instance's broker.xml: the
// max-disk-usage "artemis create" writes, and the min-disk-free written
// after it by diskLimit.
var diskLimitRE = regexp.MustCompile(`<max-disk-usage>[^<]*</max-disk-usage>(\s*<min-disk-free>[^<]*</min-disk-free>)?`)

// diskLimit makes the broker block producers only when less than 1 GB of
// its disk is free, not at Artemis' default of 90% used: on a
// workstation's disk, 90% full, every producer was blocked and runs sent
// nothing.
func diskLimit(brokerXML []byte) []byte {
	return diskLimitRE.ReplaceAllLiteral(brokerXML, []byte("<max-disk-usage>100</max-disk-usage>\n      <min-disk-free>1GB</min-disk-free>"))
}

// acceptorsRE matches the acceptors of an instance's broker.xml.
var acceptorsRE = regexp.MustCompile(`(?s)<acceptors>.*</acceptors>`)

// acceptors is the broker's acceptors element: one per listener served,
// each taking AMQP 1.0 and Artemis' core protocol, the core one with
// the settings "artemis create" gives it.
func acceptors(c *local.Cluster, n *local.Node) string {
	const common = "tcpSendBufferSize=1048576;tcpReceiveBufferSize=1048576;protocols=AMQP,CORE;useEpoll=true;amqpCredits=1000;amqpLowCredits=300;amqpMinLargeMessageSize=102400"
	var b strings.Builder
	b.WriteString("<acceptors>\n")
	if c.Serving("plain") {
		fmt.Fprintf(&b, "         <acceptor name=\"plain\">tcp://%s?%s</acceptor>\n", n.Addr(c.ListenerKey("plain")), common)
	}
	if sec := c.Security(); sec != nil && c.Serving("tls") {
		fmt.Fprintf(&b, "         <acceptor name=\"tls\">tcp://%s?%s;sslEnabled=true;keyStoreType=PEM;keyStorePath=%s</acceptor>\n",
			n.Addr(c.ListenerKey("tls")), common, sec.NodeKeyStore(n))
	}
	b.WriteString("      </acceptors>")
	return b.String()
}

// writeLogin writes the broker's users, roles and login modules: the
// user with the secured cluster's password, or, unsecured, anyone let in
// as that user.
func writeLogin(c *local.Cluster, etc string) error {
	pw, login := "", `activemq {
   org.apache.activemq.artemis.spi.core.security.jaas.GuestLoginModule required
       org.apache.activemq.jaas.guest.user="`+local.Username+`"
       org.apache.activemq.jaas.guest.role="amq";
};
`
	if sec := c.Security(); sec != nil {
		var err error
		if pw, err = sec.Password(); err != nil {
			return err
		}
		login = `activemq {
   org.apache.activemq.artemis.spi.core.security.jaas.PropertiesLoginModule required
       reload=false
       org.apache.activemq.jaas.properties.user="artemis-users.properties"
       org.apache.activemq.jaas.properties.role="artemis-roles.properties";
};
`
	}
	files := []struct {
		name, text string
		mode       os.FileMode
	}{
		{"login.config", login, 0o644},
		// A secured broker's users file holds its user's password.
		{"artemis-users.properties", local.Username + " = " + pw + "\n", 0o600},
		{"artemis-roles.properties", "amq = " + local.Username + "\n", 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(etc, f.name), []byte(f.text), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// Environ implements local.Environer: the JVM's options, among them a
// heap of HeapMB, which the instance's start script takes in place of
// those "artemis create" wrote.
func (Kind) Environ(c *local.Cluster, n *local.Node) []string {
	return []string{fmt.Sprintf("JAVA_ARGS=-XX:+UseG1GC -Xms%dM -Xmx%[1]dM -XX:AutoBoxCacheMax=20000 -Dlog4j2.disableJmx=true --add-opens java.base/jdk.internal.misc=ALL-UNNAMED", c.HeapMB)}
}

// Command implements local.Kind: the instance's start script, which
// becomes the JVM (its command line names the instance's directory).
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	return []string{filepath.Join(instance(n), "bin", "artemis"), "run"}
}

// Ready implements local.Kind: the broker opens an AMQP connection on
// its first listener, with the user's password when it is secured.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	n := c.Nodes()[0]
	dc := &workload.DriverConfig{Name: "artemis", Source: "local"}
	var opts driver.Options
	if sec := c.Security(); sec != nil {
		pw, err := sec.Password()
		if err != nil {
			return err
		}
		opts.Credentials = &driver.Credentials{CAFile: sec.CAFile, Username: sec.Username, Password: pw}
		if !c.Serving("plain") {
			dc.Common = workload.Properties{{Key: "tls", Value: "true"}}
		}
	}
	opts.Endpoints = []string{n.Addr("client")}
	d, err := New(dc, opts)
	if err != nil {
		return err
	}
	defer d.Close()
	_, err = d.BrokerVersion(ctx)
	return err
}
