package pulsar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
)

// Version is the Apache Pulsar release brokerbench installs and runs.
const Version = "4.0.7"

// NewLocal returns a local Pulsar cluster of brokers nodes, its brokers'
// binary protocol on port, with default directories ("pulsar-PORT" under
// the state directory): a standalone node for one broker (heap 1024 MB),
// else a cluster of brokers and one ZooKeeper node (heap 512 MB for each
// broker and its bookie).
func NewLocal(port, brokers int) *local.Cluster {
	heap := 1024
	if brokers > 1 {
		heap = 512
	}
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("pulsar-%d", port)),
		Port: port, Brokers: brokers, HeapMB: heap}
}

// Kind is the local.Kind of Pulsar. One broker is a standalone node: a
// broker, one bookie and the metadata store (RocksDB) in one JVM, as
// Pulsar's PulsarStandaloneStarter runs them, its ledgers with one copy.
// More brokers are a cluster named "local" (the name OMB's driver files
// and deployments give): one ZooKeeper node as the metadata store, and
// on each broker node a broker with its bookie in one JVM
// (PulsarBrokerStarter --run-bookie), its ledgers on min(3, brokers)
// bookies, written to all of them and acknowledged by a majority. Neither
// runs the functions worker, stream storage, transactions or the
// WebSocket service. Each broker node serves the binary protocol on its
// "client" port and the admin API, topic lookups and its metrics on its
// "http" port; its bookie listens on the "bookie" port, and the
// ZooKeeper node on its "zookeeper" port. Secured (see Listeners), a
// broker also serves both over TLS, and asks every client for a token.
type Kind struct{}

var (
	_ local.StartInOrder = Kind{}
	_ local.Initializer  = Kind{}
	_ local.Metered      = Kind{}
	_ local.LastToStop   = Kind{}
)

// Name implements local.Kind.
func (Kind) Name() string { return "pulsar" }

// Product implements local.Kind.
func (Kind) Product() string { return "Apache Pulsar" }

// Version implements local.Kind.
func (Kind) Version() string { return Version }

// libDir is where the Pulsar jars are, under cacheDir.
func libDir(cacheDir string) string {
	return filepath.Join(cacheDir, "pulsar-"+Version, "lib")
}

// Install downloads the pinned Pulsar broker and its dependencies from
// Maven Central into cacheDir (about 250 MB, two minutes on first use),
// unless already there. It needs Java 17+ and Maven.
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	what := "Pulsar " + Version
	if err := local.CheckJava(ctx, what, 17); err != nil {
		return err
	}
	dist := filepath.Dir(libDir(cacheDir))
	done := filepath.Join(dist, ".complete")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	if _, err := local.Maven(what); err != nil {
		return err
	}
	logf("installing Apache Pulsar %s from Maven Central into %s (about 250 MB, two minutes on first use)", Version, dist)
	if err := local.MavenDependencies(ctx, dist, pulsarPOM, what); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(libDir(cacheDir), "pulsar-broker-"+Version+".jar")); err != nil {
		return fmt.Errorf("Maven finished but the Pulsar broker's jar is missing in %s", libDir(cacheDir))
	}
	return os.WriteFile(done, []byte(Version+"\n"), 0o644)
}

// usualPort, usualHTTPPort and usualHTTPSPort are Pulsar's own
// defaults: the binary protocol's port and the admin API's, plain and
// over TLS.
const (
	usualPort      = 6650
	usualHTTPPort  = 8080
	usualHTTPSPort = 8443
)

// Layout implements local.Kind: one standalone node for one broker, on
// 127.0.0.1; else the ZooKeeper node (id 101, on 127.0.2.1), first as it
// starts first, then broker node i on 127.0.1.i. A broker node has a
// port for the binary protocol of each listener served (its first on
// "client"), the admin API's plain port ("http", which health checks
// and metrics use, and which asks for a token too on a secured
// cluster), and on a cluster serving "tls" the admin API's TLS port
// ("https"). On Pulsar's usual client port, 6650, the admin API's ports
// are its usual ones, 8080 and 8443, where free (OMB's pulsar.yaml names
// them).
func (Kind) Layout(c *local.Cluster) []*local.Node {
	http, https := 0, 0
	if c.Port == usualPort {
		http, https = usualHTTPPort, usualHTTPSPort
	}
	var nodes []*local.Node
	if c.Brokers > 1 {
		nodes = append(nodes, &local.Node{ID: zookeeperNodeID, Roles: []string{"zookeeper"}, Host: local.LoopbackHost(false, true, 1),
			Ports: map[string]int{"zookeeper": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", zookeeperNodeID))})
	}
	for i := 1; i <= c.Brokers; i++ {
		n := &local.Node{ID: i, Roles: []string{"broker", "bookie"}, Host: local.LoopbackHost(c.Brokers == 1, false, i),
			Ports: map[string]int{"client": 0, "http": http, "bookie": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		for _, l := range c.ServedListeners() {
			n.Ports[c.ListenerKey(l)] = 0
		}
		if c.Serving("tls") {
			n.Ports["https"] = https
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// Configure implements local.Kind: each node's config files and log
// config, and a secured cluster's security files (see tokenKeyFile). A
// fresh standalone node's metadata and ledgers are created by its first
// start; a fresh cluster's by Initialize.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	if sec := c.Security(); sec != nil {
		if err := writeSecurityFiles(c, sec); err != nil {
			return fmt.Errorf("write the Pulsar security files: %w", err)
		}
	}
	zk := zookeeperNode(c.Nodes())
	for _, n := range c.Nodes() {
		files := map[string]string{"log4j2.xml": pulsarLog4j}
		switch {
		case c.Brokers == 1:
			files["standalone.conf"] = standaloneConfig(c, n)
		case n.HasRole("zookeeper"):
			files["zookeeper.conf"] = zookeeperConfig(n)
		default:
			files["broker.conf"] = brokerConfig(c, n, zk)
			files["bookkeeper.conf"] = bookieConfig(c, n, zk)
		}
		for name, text := range files {
			if err := os.WriteFile(n.ConfigFile(name), []byte(text), 0o644); err != nil {
				return fmt.Errorf("write node %d %s: %w", n.ID, name, err)
			}
		}
	}
	return nil
}

// standaloneConfig is node n's standalone.conf: the broker's settings,
// which its bookie reads too (bookiePort, advertisedAddress).
func standaloneConfig(c *local.Cluster, n *local.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by brokerbench: node %d of a %d-node Pulsar standalone cluster on loopback.\n", n.ID, c.Brokers)
	b.WriteString("clusterName=standalone\n")
	writeBrokerSettings(&b, c, n, persistenceFor(1))
	// The bookie: its port, on the loopback interface's address (the one
	// advertised) rather than every interface.
	fmt.Fprintf(&b, "bookiePort=%d\nallowEphemeralPorts=true\nlisteningInterface=lo\n", n.Ports["bookie"])
	return b.String()
}

// writeBrokerSettings writes to b the broker settings a standalone node
// and a cluster's broker share: node n's address and ports, its TLS and
// authentication when c is secured, ledgers of persistence p by default,
// and the services brokerbench does not use left off.
func writeBrokerSettings(b *strings.Builder, c *local.Cluster, n *local.Node, p persistence) {
	fmt.Fprintf(b, "advertisedAddress=%s\nbindAddress=%[1]s\n", n.Host)
	if c.Serving("plain") {
		fmt.Fprintf(b, "brokerServicePort=%d\n", n.Ports[c.ListenerKey("plain")])
	} else {
		b.WriteString("brokerServicePort=\n")
	}
	fmt.Fprintf(b, "webServicePort=%d\n", n.Ports["http"])
	writeSecuritySettings(b, c, n)
	fmt.Fprintf(b, "managedLedgerDefaultEnsembleSize=%d\nmanagedLedgerDefaultWriteQuorum=%d\nmanagedLedgerDefaultAckQuorum=%d\n", p.ensemble, p.write, p.ack)
	// Metrics by namespace, not by topic: a run's partitions would
	// each be series of their own.
	b.WriteString(`exposeTopicLevelMetricsInPrometheus=false
functionsWorkerEnabled=false
transactionCoordinatorEnabled=false
webSocketServiceEnabled=false
brokerDeleteInactiveTopicsEnabled=false
`)
}

// pulsarLog4j logs at info level to the console, which the node's log
// file receives.
const pulsarLog4j = `<Configuration status="warn">
  <Appenders>
    <Console name="console" target="SYSTEM_OUT">
      <PatternLayout pattern="[%d] %p %m (%c{1})%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="console"/></Root>
  </Loggers>
</Configuration>
`

// Command implements local.Kind: PulsarStandaloneStarter, or on a
// cluster's broker node PulsarBrokerStarter running the node's bookie
// too, with the JVM options Pulsar's own start script gives them, a heap
// of HeapMB and as much direct memory; ZooKeeper on the cluster's
// ZooKeeper node, with a heap of 128 MB.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	switch {
	case n.HasRole("zookeeper"):
		return append(java(c, n, zookeeperHeapMB), "org.apache.zookeeper.server.quorum.QuorumPeerMain", n.ConfigFile("zookeeper.conf"))
	case c.Brokers > 1:
		return append(java(c, n, c.HeapMB), "org.apache.pulsar.PulsarBrokerStarter",
			"--broker-conf", n.ConfigFile("broker.conf"), "--run-bookie", "--bookie-conf", n.ConfigFile("bookkeeper.conf"))
	}
	return append(java(c, n, c.HeapMB), "org.apache.pulsar.PulsarStandaloneStarter",
		"--config", n.ConfigFile("standalone.conf"), "--no-functions-worker", "--no-stream-storage",
		"--metadata-dir", filepath.Join(n.Dir, "metadata"), "--bookkeeper-dir", filepath.Join(n.Dir, "bookkeeper"),
		"--bookkeeper-port", fmt.Sprint(n.Ports["bookie"]))
}

// java is the command line of a JVM of node n, up to its main class: a
// heap of heapMB and as much direct memory, the modules Pulsar opens,
// the node's log config and the Pulsar jars.
func java(c *local.Cluster, n *local.Node, heapMB int) []string {
	argv := []string{"java", fmt.Sprintf("-Xms%dm", heapMB/2), fmt.Sprintf("-Xmx%dm", heapMB), fmt.Sprintf("-XX:MaxDirectMemorySize=%dm", heapMB)}
	for _, pkg := range []string{"java.base/java.io", "java.base/java.util.zip", "java.base/sun.net", "java.management/sun.management",
		"jdk.management/com.sun.management.internal", "java.base/java.nio", "java.base/jdk.internal.misc", "java.base/sun.nio.ch", "java.base/java.lang"} {
		argv = append(argv, "--add-opens", pkg+"=ALL-UNNAMED")
	}
	return append(argv, "-Dio.netty.tryReflectionSetAccessible=true", "-Dlog4j2.configurationFile="+n.ConfigFile("log4j2.xml"),
		"-cp", filepath.Join(libDir(c.CacheDir), "*"))
}

// MetricsURL implements local.Metered: a broker's Prometheus endpoint,
// on its web service port ("/metrics" answers with a redirect there);
// none for the ZooKeeper node.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	if !n.HasRole("broker") {
		return ""
	}
	return "http://" + n.Addr("http") + "/metrics/"
}

// Ready implements local.Kind: every broker answers its health check,
// which writes and reads a message of its own through the bookies; in a
// cluster, every broker is also registered with the others, and a
// topic's lookup names one of them.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	var brokers []*local.Node
	for _, n := range c.Nodes() {
		if n.HasRole("broker") {
			brokers = append(brokers, n)
		}
	}
	// The brokers are asked at once: a first health check creates the
	// broker's own topic, which takes seconds on a busy machine.
	errs := make([]error, len(brokers))
	var wg sync.WaitGroup
	for i, n := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := healthy(ctx, c, "http://"+n.Addr("http")); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", n.ID, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.Brokers == 1 {
		return nil
	}
	return clusterReady(ctx, c, brokers)
}

// healthy returns nil once the broker of c whose admin API is at base
// answers its health check with "ok".
func healthy(ctx context.Context, c *local.Cluster, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a, err := localAdmin(c, base)
	if err != nil {
		return err
	}
	var answer string
	if err := a.do(ctx, http.MethodGet, "/admin/v2/brokers/health", nil, &answer); err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if answer != "ok" {
		return fmt.Errorf("health check: %q", answer)
	}
	return nil
}

// localEndpoints are the addresses a driver is given of a running local
// cluster, whose listener ("plain", "tls"; "" or "client": its first) it
// connects to: every broker's binary protocol on that listener, then
// every broker's admin API on it (pulsar+ssl:// and https:// for "tls");
// a cluster that records no listeners serves its plain one alone.
func localEndpoints(st local.Status, listener string) []string {
	key, tls := "client", false
	if len(st.Listeners) > 0 {
		if listener == "" || listener == "client" {
			listener = st.Listeners[0]
		}
		tls = listener == "tls"
		if listener != st.Listeners[0] {
			key = listener
		}
	}
	scheme, adminScheme, adminKey := "pulsar", "http", "http"
	if tls {
		scheme, adminScheme, adminKey = "pulsar+ssl", "https", "https"
	}
	var service, admin []string
	for _, n := range st.Nodes {
		if _, ok := n.Ports[key]; ok && n.HasRole("broker") {
			service = append(service, fmt.Sprintf("%s://%s:%d", scheme, n.Host, n.Ports[key]))
			admin = append(admin, fmt.Sprintf("%s://%s:%d", adminScheme, n.Host, n.Ports[adminKey]))
		}
	}
	return append(service, admin...)
}

const pulsarPOM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.brokerbench</groupId>
  <artifactId>pulsar-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.pulsar</groupId><artifactId>pulsar-broker</artifactId><version>` + Version + `</version></dependency>
  </dependencies>
</project>
`
