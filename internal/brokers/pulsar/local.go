package pulsar

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
)

// Version is the Apache Pulsar release brokerbench installs and runs.
const Version = "4.0.7"

// NewLocal returns a local Pulsar standalone node, its binary protocol on
// port, with default directories ("pulsar-PORT" under the state
// directory) and a heap of 1024 MB. A local Pulsar cluster has one node
// (the module's MaxNodes).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("pulsar-%d", port)),
		Port: port, Brokers: brokers, HeapMB: 1024}
}

// Kind is the local.Kind of Pulsar standalone nodes: a broker, one bookie
// and the metadata store (RocksDB) in one JVM, as Pulsar's
// PulsarStandaloneStarter runs them, without the functions worker,
// stream storage, transactions or the WebSocket service. Its ledgers
// have one copy (ensemble, write and ack quorums of 1). Each node serves
// the binary protocol on its "client" port and the admin API, topic
// lookups and its metrics on its "http" port; its bookie listens on the
// "bookie" port.
type Kind struct{}

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

// Layout implements local.Kind: one standalone node per broker (the
// module allows one), on the cluster's loopback address.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	var nodes []*local.Node
	for i := 1; i <= c.Brokers; i++ {
		nodes = append(nodes, &local.Node{ID: i, Roles: []string{"broker", "bookie"}, Host: local.LoopbackHost(c.Brokers == 1, false, i),
			Ports: map[string]int{"client": 0, "http": 0, "bookie": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))})
	}
	return nodes
}

// Configure implements local.Kind: each node's standalone.conf and log
// config. A fresh node's metadata and ledgers are created by its first
// start.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	for _, n := range c.Nodes() {
		if err := os.WriteFile(n.ConfigFile("standalone.conf"), []byte(standaloneConfig(c, n)), 0o644); err != nil {
			return fmt.Errorf("write node %d config: %w", n.ID, err)
		}
		if err := os.WriteFile(n.ConfigFile("log4j2.xml"), []byte(pulsarLog4j), 0o644); err != nil {
			return fmt.Errorf("write node %d log config: %w", n.ID, err)
		}
	}
	return nil
}

// standaloneConfig is node n's standalone.conf: the broker's settings,
// which its bookie reads too (bookiePort, advertisedAddress).
func standaloneConfig(c *local.Cluster, n *local.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by brokerbench: node %d of a %d-node Pulsar standalone cluster on loopback.\n", n.ID, c.Brokers)
	fmt.Fprintf(&b, "clusterName=standalone\nadvertisedAddress=%s\nbindAddress=%[1]s\n", n.Host)
	fmt.Fprintf(&b, "brokerServicePort=%d\nwebServicePort=%d\n", n.Ports["client"], n.Ports["http"])
	// The bookie: its port, on the loopback interface's address (the one
	// advertised) rather than every interface.
	fmt.Fprintf(&b, "bookiePort=%d\nallowEphemeralPorts=true\nlisteningInterface=lo\n", n.Ports["bookie"])
	// Metrics by namespace, not by topic: a run's partitions would
	// each be series of their own.
	b.WriteString("exposeTopicLevelMetricsInPrometheus=false\n")
	b.WriteString(`functionsWorkerEnabled=false
transactionCoordinatorEnabled=false
webSocketServiceEnabled=false
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
brokerDeleteInactiveTopicsEnabled=false
`)
	return b.String()
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

// Command implements local.Kind: PulsarStandaloneStarter with the JVM
// options Pulsar's own start script gives it, a heap of HeapMB and as
// much direct memory, its metadata and ledgers in the node's directory.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	argv := []string{"java", fmt.Sprintf("-Xms%dm", c.HeapMB/2), fmt.Sprintf("-Xmx%dm", c.HeapMB), fmt.Sprintf("-XX:MaxDirectMemorySize=%dm", c.HeapMB)}
	for _, pkg := range []string{"java.base/java.io", "java.base/java.util.zip", "java.base/sun.net", "java.management/sun.management",
		"jdk.management/com.sun.management.internal", "java.base/java.nio", "java.base/jdk.internal.misc", "java.base/sun.nio.ch", "java.base/java.lang"} {
		argv = append(argv, "--add-opens", pkg+"=ALL-UNNAMED")
	}
	return append(argv, "-Dio.netty.tryReflectionSetAccessible=true", "-Dlog4j2.configurationFile="+n.ConfigFile("log4j2.xml"),
		"-cp", filepath.Join(libDir(c.CacheDir), "*"), "org.apache.pulsar.PulsarStandaloneStarter",
		"--config", n.ConfigFile("standalone.conf"), "--no-functions-worker", "--no-stream-storage",
		"--metadata-dir", filepath.Join(n.Dir, "metadata"), "--bookkeeper-dir", filepath.Join(n.Dir, "bookkeeper"),
		"--bookkeeper-port", fmt.Sprint(n.Ports["bookie"]))
}

// MetricsURL implements local.Metered: the broker's Prometheus endpoint,
// on its web service port ("/metrics" answers with a redirect there).
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	return "http://" + n.Addr("http") + "/metrics/"
}

// Ready implements local.Kind: every node's broker answers its health
// check, which writes and reads a message of its own through the bookie.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	for _, n := range c.Nodes() {
		if err := healthy(ctx, "http://"+n.Addr("http")); err != nil {
			return fmt.Errorf("node %d: %w", n.ID, err)
		}
	}
	return nil
}

// healthy returns nil once the broker whose admin API is at base answers
// its health check with "ok".
func healthy(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/admin/v2/brokers/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("health check: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// localEndpoints are the addresses a driver is given of a running local
// cluster: every node's binary protocol, then every node's admin API.
func localEndpoints(st local.Status, _ string) []string {
	var service, admin []string
	for _, n := range st.Nodes {
		service = append(service, fmt.Sprintf("pulsar://%s:%d", n.Host, n.Ports["client"]))
		admin = append(admin, fmt.Sprintf("http://%s:%d", n.Host, n.Ports["http"]))
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
