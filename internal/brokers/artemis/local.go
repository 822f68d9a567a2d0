package artemis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Version is the ActiveMQ Artemis release brokerbench installs and runs.
const Version = "2.40.0"

// NewLocal returns a local Artemis broker, or a cluster of brokers,
// their AMQP acceptors on port, with default directories
// ("artemis-PORT" under the state directory) and a heap of 1024 MB for
// one broker, 512 MB for each of a cluster's.
func NewLocal(port, brokers int) *local.Cluster {
	heap := 1024
	if brokers > 1 {
		heap = 512
	}
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("artemis-%d", port)),
		Port: port, Brokers: brokers, HeapMB: heap}
}

// Kind is the local.Kind of ActiveMQ Artemis: each node an instance made
// by Artemis' own "artemis create" in the node's directory, its journal
// there. A node's one acceptor per listener serves AMQP 1.0 and Artemis'
// core protocol. Unsecured, it lets clients in anonymously (and its user
// with any password); secured, every listener asks for the user's
// password (SASL PLAIN), and the "tls" listener serves TLS with the
// cluster's certificates. Its web console, on its "http" port, serves
// the Jolokia agent its metrics are read from, to the same logins, over
// plain HTTP.
//
// Several nodes are a symmetric cluster of primaries, without backups:
// each node connects to every other one through a static connector to
// its "cluster" acceptor (the core protocol, plain, logged in as the
// cluster's user), learns which queues the others have and whether they
// have consumers, and forwards a message to another node's queue of the
// same name when that one has consumers and its own does not, or in turn
// when both have (message-load-balancing ON_DEMAND); a queue whose
// consumers are gone hands its messages to the nodes that have some
// (redistribution-delay 0). A node keeps no copy of another's messages.
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

// OpenListeners implements local.Securer: none, since a secured broker
// asks every client for the user's password, on every acceptor (the
// properties login module in place of the guest one; see writeLogin).
func (Kind) OpenListeners() []string { return nil }

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

// Layout implements local.Kind: node i on the cluster's loopback
// address, with a port per listener, one for its web console ("http"),
// and in a cluster one more for the other nodes' connections
// ("cluster").
func (Kind) Layout(c *local.Cluster) []*local.Node {
	var nodes []*local.Node
	for i := 1; i <= c.Brokers; i++ {
		n := &local.Node{ID: i, Roles: []string{"broker"}, Host: local.LoopbackHost(c.Brokers == 1, false, i),
			Ports: map[string]int{"client": 0, "http": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		for _, l := range c.ServedListeners() {
			n.Ports[c.ListenerKey(l)] = 0
		}
		if c.Brokers > 1 {
			n.Ports["cluster"] = 0
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// instance is the broker instance's directory in node n's.
func instance(n *local.Node) string { return filepath.Join(n.Dir, "instance") }

// Configure implements local.Kind: a new node's instance is made by
// "artemis create"; every start then has its acceptors, its cluster
// connection, its web console's address, and its users and login,
// written anew.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	clusterPassword := c.ID
	if sec := c.Security(); sec != nil {
		var err error
		if clusterPassword, err = sec.Password(); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes() {
		if err := configureNode(ctx, c, n, clusterPassword); err != nil {
			return err
		}
	}
	return nil
}

// configureNode makes node n's instance if it has none, and writes its
// settings; clusterPassword is the password the nodes of a cluster log
// in to each other with.
func configureNode(ctx context.Context, c *local.Cluster, n *local.Node, clusterPassword string) error {
	etc := filepath.Join(instance(n), "etc")
	if _, err := os.Stat(filepath.Join(etc, "broker.xml")); err != nil {
		// The user and password given here are replaced below.
		cmd := exec.CommandContext(ctx, filepath.Join(home(c.CacheDir), "bin", "artemis"), "create", "--silent", "--force",
			"--user", local.Username, "--password", "unused", "--require-login", "--host", n.Host, "--http-host", n.Host,
			"--no-autotune", instance(n))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("create the Artemis instance of node %d: %w\n%s", n.ID, err, local.LastLines(string(out), 20))
		}
	}
	brokerXML, err := os.ReadFile(filepath.Join(etc, "broker.xml"))
	if err != nil {
		return err
	}
	// A secured cluster's password is its nodes' cluster password.
	if err := os.WriteFile(filepath.Join(etc, "broker.xml"), brokerSettings(c, c.Nodes(), n, clusterPassword, brokerXML), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(etc, "broker.xml"), 0o600); err != nil {
		return err
	}
	bootstrapXML, err := os.ReadFile(filepath.Join(etc, "bootstrap.xml"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(etc, "bootstrap.xml"), webConsole(n, bootstrapXML), 0o644); err != nil {
		return err
	}
	return writeLogin(c, etc)
}

// webRE matches the web server of an instance's bootstrap.xml, with the
// comment "artemis create" writes before it.
var webRE = regexp.MustCompile(`(?s)\s*(<!--[^>]*-->\s*)?<web .*</web>`)

// webConsole returns the bootstrap.xml of node n's instance with its web
// server (Artemis' console, whose Jolokia agent serves the broker's
// metrics) on the node's "http" port, in place of the one "artemis
// create" wrote, or of none (an instance made without it). A node laid
// out without that port has none. Applied to its own result it changes
// nothing.
func webConsole(n *local.Node, bootstrapXML []byte) []byte {
	with := webRE.ReplaceAll(bootstrapXML, nil)
	if _, ok := n.Ports["http"]; !ok {
		return with
	}
	web := fmt.Sprintf(`
   <web path="web" rootRedirectLocation="console">
       <binding name="artemis" uri="http://%s">
           <app name="console" url="console" war="console.war"/>
       </binding>
   </web>`, n.Addr("http"))
	i := bytes.LastIndex(with, []byte("</broker>"))
	if i < 0 {
		return with
	}
	return slices.Concat(bytes.TrimRight(with[:i], " \t\r\n"), []byte(web), []byte("\n\n"), with[i:])
}

// brokerSettings returns the broker.xml "artemis create" wrote for node
// n of c's nodes with brokerbench's settings in place of its own: the
// acceptors, the cluster connection of a cluster (after the acceptors),
// the disk limit and, in a cluster, the redistribution of the messages
// of a queue without consumers. Applied to its own result it changes
// nothing.
func brokerSettings(c *local.Cluster, nodes []*local.Node, n *local.Node, clusterPassword string, brokerXML []byte) []byte {
	with := acceptorsRE.ReplaceAllLiteral(brokerXML, []byte(acceptors(c, n)+clusterConnection(nodes, n, clusterPassword)))
	redistribution := ""
	if len(nodes) > 1 {
		redistribution = "\n            <redistribution-delay>0</redistribution-delay>"
	}
	with = redistributionRE.ReplaceAllLiteral(with, []byte(`<address-setting match="#">`+redistribution))
	return diskLimit(with)
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

// acceptorsRE matches the acceptors of an instance's broker.xml, and
// the cluster connection brokerSettings writes after them.
var acceptorsRE = regexp.MustCompile(`(?s)<acceptors>.*</acceptors>(\s*<connectors>.*</cluster-connections>)?`)

// redistributionRE matches the catch-all address setting of an
// instance's broker.xml and the redistribution delay brokerSettings
// writes first in it.
var redistributionRE = regexp.MustCompile(`<address-setting match="#">(\s*<redistribution-delay>[^<]*</redistribution-delay>)?`)

// acceptors is the broker's acceptors element: one per listener served,
// each taking AMQP 1.0 and Artemis' core protocol, the core one with
// the settings "artemis create" gives it; and in a cluster the
// "cluster" acceptor, of the core protocol alone, for the other nodes.
func acceptors(c *local.Cluster, n *local.Node) string {
	const buffers = "tcpSendBufferSize=1048576;tcpReceiveBufferSize=1048576"
	const common = buffers + ";protocols=AMQP,CORE;useEpoll=true;amqpCredits=1000;amqpLowCredits=300;amqpMinLargeMessageSize=102400"
	var b strings.Builder
	b.WriteString("<acceptors>\n")
	if c.Serving("plain") {
		fmt.Fprintf(&b, "         <acceptor name=\"plain\">tcp://%s?%s</acceptor>\n", n.Addr(c.ListenerKey("plain")), common)
	}
	if sec := c.Security(); sec != nil && c.Serving("tls") {
		fmt.Fprintf(&b, "         <acceptor name=\"tls\">tcp://%s?%s;sslEnabled=true;keyStoreType=PEM;keyStorePath=%s</acceptor>\n",
			n.Addr(c.ListenerKey("tls")), common, sec.NodeKeyStore(n))
	}
	if _, ok := n.Ports["cluster"]; ok {
		fmt.Fprintf(&b, "         <acceptor name=\"cluster\">tcp://%s?%s;protocols=CORE;useEpoll=true</acceptor>\n", n.Addr("cluster"), buffers)
	}
	b.WriteString("      </acceptors>")
	return b.String()
}

// clusterConnection is node n's part of the cluster of nodes, written
// after its acceptors: a connector to every node's "cluster" acceptor, the user
// the nodes log in to each other as, with clusterPassword, and one
// cluster connection to every other node, which forwards messages on
// demand (ON_DEMAND) over one hop. It is empty for a single broker.
func clusterConnection(nodes []*local.Node, n *local.Node, clusterPassword string) string {
	if len(nodes) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n      <connectors>\n")
	for _, peer := range nodes {
		fmt.Fprintf(&b, "         <connector name=\"node-%d\">tcp://%s</connector>\n", peer.ID, peer.Addr("cluster"))
	}
	b.WriteString("      </connectors>\n")
	fmt.Fprintf(&b, "      <cluster-user>%s</cluster-user>\n      <cluster-password>%s</cluster-password>\n", clusterUser, html.EscapeString(clusterPassword))
	b.WriteString("      <cluster-connections>\n         <cluster-connection name=\"brokerbench\">\n")
	fmt.Fprintf(&b, "            <connector-ref>node-%d</connector-ref>\n", n.ID)
	b.WriteString("            <message-load-balancing>ON_DEMAND</message-load-balancing>\n            <max-hops>1</max-hops>\n            <static-connectors>\n")
	for _, peer := range nodes {
		if peer != n {
			fmt.Fprintf(&b, "               <connector-ref>node-%d</connector-ref>\n", peer.ID)
		}
	}
	b.WriteString("            </static-connectors>\n         </cluster-connection>\n      </cluster-connections>")
	return b.String()
}

// clusterUser is the user the nodes of a cluster log in to each other
// as; Artemis checks it against the cluster password alone.
const clusterUser = "brokerbench-cluster"

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
// those "artemis create" wrote; and, as that script's own, those of the
// web console: its logins are the broker's (the JAAS domain "activemq",
// whose role principals it checks), and its Jolokia agent takes the
// instance's access policy, which lets in only requests with an Origin
// of the node's own address.
func (Kind) Environ(c *local.Cluster, n *local.Node) []string {
	policy := &url.URL{Scheme: "file", Path: filepath.Join(instance(n), "etc", "jolokia-access.xml")}
	return []string{fmt.Sprintf("JAVA_ARGS=-XX:+UseG1GC -Xms%dM -Xmx%[1]dM -XX:AutoBoxCacheMax=20000 -Dlog4j2.disableJmx=true --add-opens java.base/jdk.internal.misc=ALL-UNNAMED "+
		"-Dhawtio.realm=activemq -Dhawtio.rolePrincipalClasses=org.apache.activemq.artemis.spi.core.security.jaas.RolePrincipal "+
		"-Dhawtio.offline=true -Dhawtio.disableProxy=true -Djolokia.policyLocation=%s", c.HeapMB, policy)}
}

// MetricsURL implements local.Metered: the Jolokia agent of the node's
// web console, read as the cluster's user: secured, without its
// password, which the reader of a secured cluster's metrics is given
// apart; unsecured, with unsecuredPassword. None on a node laid out
// before brokerbench read Artemis' metrics.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	if _, ok := n.Ports["http"]; !ok {
		return ""
	}
	user := url.User(local.Username)
	if !c.Secured() {
		user = url.UserPassword(local.Username, unsecuredPassword)
	}
	return (&url.URL{Scheme: "http", User: user, Host: n.Addr("http"), Path: "/console/jolokia"}).String()
}

// unsecuredPassword is the password an unsecured node's console is given:
// it lets its user in with any password but an empty one.
const unsecuredPassword = "unsecured"

// Command implements local.Kind: the instance's start script, which
// becomes the JVM (its command line names the instance's directory).
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	return []string{filepath.Join(instance(n), "bin", "artemis"), "run"}
}

// Ready implements local.Kind: every node opens an AMQP connection on
// its first listener, with the user's password when it is secured; in a
// cluster, every node counts all of them in its topology.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
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
	nodes := c.Nodes()
	for _, n := range nodes {
		opts.Endpoints = []string{n.Addr("client")}
		if err := nodeReady(ctx, dc, opts, len(nodes)); err != nil {
			return fmt.Errorf("node %d: %w", n.ID, err)
		}
	}
	return nil
}

// nodeReady returns nil once the node a driver with dc and opts reaches
// serves clients and counts members nodes in its cluster's topology.
func nodeReady(ctx context.Context, dc *workload.DriverConfig, opts driver.Options, members int) error {
	d, err := newDriver(dc, opts)
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.BrokerVersion(ctx); err != nil || members == 1 {
		return err
	}
	_, m, err := d.manage(ctx, d.nodes[0])
	if err != nil {
		return err
	}
	var topology string
	if err := m.invoke(ctx, "broker", "listNetworkTopology", &topology); err != nil {
		return fmt.Errorf("read the cluster's topology: %w", err)
	}
	var known []json.RawMessage
	if err := json.Unmarshal([]byte(topology), &known); err != nil {
		return fmt.Errorf("unreadable topology %q: %w", topology, err)
	}
	if len(known) < members {
		return fmt.Errorf("%d of the %d nodes in its cluster's topology", len(known), members)
	}
	return nil
}
