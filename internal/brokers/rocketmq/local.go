package rocketmq

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
)

// Version is the Apache RocketMQ release brokerbench installs and runs.
const Version = "5.3.3"

// NewLocal returns a local RocketMQ node, its proxy's gRPC endpoint on
// port, with default directories ("rocketmq-PORT" under the state
// directory) and a broker heap of 512 MB. A local RocketMQ cluster has
// one broker (the module's MaxNodes).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("rocketmq-%d", port)),
		Port: port, Brokers: brokers, HeapMB: 512}
}

// Kind is the local.Kind of RocketMQ 5: a name server in one JVM (node
// 101, its "namesrv" port), and a broker with its proxy in another, as
// the proxy's local mode runs them (node 1): the proxy's gRPC endpoint
// on its "client" port, the broker's remoting protocol on "remoting"
// (and on the port two below, RocketMQ's "fast" channel), its
// replication on "ha", the proxy's remoting endpoint on
// "proxy-remoting", and the broker's Prometheus metrics on "metrics".
// The broker keeps its store, and both JVMs their logs, in their node's
// directory.
type Kind struct{}

// Name implements local.Kind.
func (Kind) Name() string { return "rocketmq" }

// Product implements local.Kind.
func (Kind) Product() string { return "Apache RocketMQ" }

// Version implements local.Kind.
func (Kind) Version() string { return Version }

// Listeners implements local.Securer: the proxy serves plaintext and
// TLS on its one gRPC port (its "permissive" TLS mode), TLS with a
// certificate of the cluster's own authority when the cluster serves
// "tls" (local up rocketmq --security plain,tls). It checks no user: the
// cluster's user and password are not asked for.
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// namesrvID is the name server node's id.
const namesrvID = 101

// clusterName is the local broker's cluster, the driver's default.
const clusterName = "DefaultCluster"

// libDir is where the RocketMQ jars are, under cacheDir.
func libDir(cacheDir string) string {
	return filepath.Join(cacheDir, "rocketmq-"+Version, "lib")
}

// Install downloads the pinned name server, broker and proxy with their
// dependencies from Maven Central into cacheDir (about 90 MB, a minute
// on first use), unless already there. It needs Java 17+ and Maven.
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	what := "RocketMQ " + Version
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
	logf("installing Apache RocketMQ %s from Maven Central into %s (about 90 MB, a minute on first use)", Version, dist)
	if err := local.MavenDependencies(ctx, dist, rocketmqPOM, what); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(libDir(cacheDir), "rocketmq-proxy-"+Version+".jar")); err != nil {
		return fmt.Errorf("Maven finished but the RocketMQ proxy's jar is missing in %s", libDir(cacheDir))
	}
	return os.WriteFile(done, []byte(Version+"\n"), 0o644)
}

// usualPort and usualNamesrvPort are RocketMQ's own defaults: the
// proxy's gRPC port and the name server's.
const (
	usualPort        = 8081
	usualNamesrvPort = 9876
)

// Layout implements local.Kind: the broker node (the module allows one)
// and the name server's, on the cluster's loopback address. On the
// proxy's usual port, 8081, the name server is on its usual port, 9876,
// where free (OMB's RocketMQ files and RocketMQ's own tools name it).
func (Kind) Layout(c *local.Cluster) []*local.Node {
	host := local.LoopbackHost(true, false, 1)
	namesrv := 0
	if c.Port == usualPort {
		namesrv = usualNamesrvPort
	}
	return []*local.Node{
		{ID: 1, Roles: []string{"broker", "proxy"}, Host: host, Dir: filepath.Join(c.StateDir, "node-1"),
			Ports: map[string]int{"client": 0, "remoting": 0, "ha": 0, "proxy-remoting": 0, "metrics": 0}},
		{ID: namesrvID, Roles: []string{"namesrv"}, Host: host, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", namesrvID)),
			Ports: map[string]int{"namesrv": namesrv}},
	}
}

// nodes returns the cluster's broker node and its name server node.
func nodes(c *local.Cluster) (broker, namesrv *local.Node) {
	return c.Node(1), c.Node(namesrvID)
}

// Configure implements local.Kind: the name server's properties, the
// broker's and the proxy's config. The broker's remoting port must have
// its "fast" channel's port, two below, free.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	b, ns := nodes(c)
	if b == nil || ns == nil {
		return fmt.Errorf("a local RocketMQ cluster has a broker node and a name server node, the layout has %d nodes", len(c.Nodes()))
	}
	if fast := b.Ports["remoting"] - 2; !free(b.Host, fast) {
		return fmt.Errorf("port %d on %s, the broker's fast channel (its remoting port %d less 2), is in use: %w", fast, b.Host, b.Ports["remoting"], local.ErrPortInUse)
	}
	files := []struct {
		n          *local.Node
		name, text string
	}{
		{ns, "namesrv.properties", namesrvConfig(ns)},
		{b, "broker.conf", brokerConfig(b, ns)},
		{b, "proxy.json", proxyConfig(c, b, ns)},
	}
	for _, f := range files {
		if err := os.WriteFile(f.n.ConfigFile(f.name), []byte(f.text), 0o644); err != nil {
			return fmt.Errorf("write node %d config: %w", f.n.ID, err)
		}
	}
	return nil
}

// free says whether a port can be bound on host.
func free(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// namesrvConfig is the name server's properties.
func namesrvConfig(ns *local.Node) string {
	return fmt.Sprintf("# Written by brokerbench: the name server of a local RocketMQ node.\nlistenPort=%d\nbindAddress=%s\n", ns.Ports["namesrv"], ns.Host)
}

// brokerConfig is the broker's properties: its listeners on the node's
// address, its store in the node's directory, registered with the name
// server every 10 s (RocketMQ's shortest period) so that a broker
// started before its name server is soon known. Topics are created by
// the driver, never on first use.
func brokerConfig(b, ns *local.Node) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Written by brokerbench: the broker of a local RocketMQ node.\n")
	fmt.Fprintf(&s, "brokerClusterName=%s\nbrokerName=broker-%d\nbrokerId=0\n", clusterName, b.ID)
	fmt.Fprintf(&s, "brokerIP1=%s\nbindAddress=%[1]s\nlistenPort=%d\nhaListenPort=%d\n", b.Host, b.Ports["remoting"], b.Ports["ha"])
	fmt.Fprintf(&s, "namesrvAddr=%s\n", ns.Addr("namesrv"))
	store := filepath.Join(b.Dir, "store")
	fmt.Fprintf(&s, "storePathRootDir=%s\nstorePathCommitLog=%s\n", store, filepath.Join(store, "commitlog"))
	s.WriteString("autoCreateTopicEnable=false\nregisterNameServerPeriod=10000\n")
	fmt.Fprintf(&s, "metricsExporterType=PROM\nmetricsPromExporterHost=%s\nmetricsPromExporterPort=%d\n", b.Host, b.Ports["metrics"])
	return s.String()
}

// proxyConfig is the proxy's JSON config, in local mode beside its
// broker; it stops within 3 s rather than the 30 s it gives its gRPC
// calls by default. Serving "tls", its certificate is the node's of the
// cluster's authority; else the one it makes itself at start (its test
// mode), which no client can check.
func proxyConfig(c *local.Cluster, b, ns *local.Node) string {
	conf := map[string]any{"rocketMQClusterName": clusterName, "proxyMode": "local", "grpcServerPort": b.Ports["client"],
		"remotingListenPort": b.Ports["proxy-remoting"], "namesrvAddr": ns.Addr("namesrv"), "grpcShutdownTimeSeconds": 3}
	if sec := c.Security(); sec != nil && c.Serving("tls") {
		conf["tlsTestModeEnable"], conf["tlsKeyPath"], conf["tlsCertPath"] = false, sec.NodeKeyStore(b), sec.NodeKeyStore(b)
	}
	text, _ := json.Marshal(conf)
	return string(text) + "\n"
}

// Command implements local.Kind: the name server with a heap of 128 MB,
// or the proxy in local mode, its broker in the same JVM, with a heap of
// HeapMB and as much direct memory. user.home is the node's directory,
// where RocketMQ writes its logs.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	classpath := filepath.Join(libDir(c.CacheDir), "*")
	if n.ID == namesrvID {
		return []string{"java", "-Xms128m", "-Xmx128m", "-XX:+UseG1GC", "-Duser.home=" + n.Dir, "-cp", classpath,
			"org.apache.rocketmq.namesrv.NamesrvStartup", "-c", n.ConfigFile("namesrv.properties")}
	}
	return []string{"java", fmt.Sprintf("-Xms%dm", c.HeapMB), fmt.Sprintf("-Xmx%dm", c.HeapMB), fmt.Sprintf("-XX:MaxDirectMemorySize=%dm", c.HeapMB),
		"-XX:+UseG1GC", "-Duser.home=" + n.Dir, "-Dcom.rocketmq.proxy.configPath=" + n.ConfigFile("proxy.json"), "-cp", classpath,
		"org.apache.rocketmq.proxy.ProxyStartup", "-pm", "local", "-bc", n.ConfigFile("broker.conf")}
}

// Environ implements local.Environer: ROCKETMQ_HOME, which RocketMQ's
// processes refuse to start without, is the node's directory.
func (Kind) Environ(c *local.Cluster, n *local.Node) []string {
	return []string{"ROCKETMQ_HOME=" + n.Dir}
}

// Ready implements local.Kind: the name server routes the cluster to the
// broker at its remoting address, and the proxy, which starts after its
// broker, accepts connections.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	b, ns := nodes(c)
	a := &admin{namesrv: []string{ns.Addr("namesrv")}, cluster: clusterName, dial: (&net.Dialer{}).DialContext}
	r, err := a.brokers(ctx)
	if err != nil {
		return err
	}
	if want := b.Addr("remoting"); r.masters()[fmt.Sprintf("broker-%d", b.ID)] != want {
		return fmt.Errorf("the name server does not route to broker %d at %s yet", b.ID, want)
	}
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", b.Addr("client"))
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return conn.Close()
}

// localEndpoints are the addresses a driver is given of a running local
// cluster: the proxy's gRPC endpoint, then the name server's.
func localEndpoints(st local.Status, _ string) []string {
	var proxies, servers []string
	for _, n := range st.Nodes {
		if p, ok := n.Ports["client"]; ok {
			proxies = append(proxies, net.JoinHostPort(n.Host, fmt.Sprint(p)))
		}
		if p, ok := n.Ports["namesrv"]; ok {
			servers = append(servers, namesrvScheme+net.JoinHostPort(n.Host, fmt.Sprint(p)))
		}
	}
	return append(proxies, servers...)
}

const rocketmqPOM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.brokerbench</groupId>
  <artifactId>rocketmq-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>` + Version + `</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-proxy</artifactId><version>` + Version + `</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>` + Version + `</version></dependency>
  </dependencies>
</project>
`
