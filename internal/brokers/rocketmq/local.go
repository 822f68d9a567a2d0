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

// NewLocal returns a local RocketMQ cluster of brokers broker nodes,
// its proxy's gRPC endpoint on port, with default directories
// ("rocketmq-PORT" under the state directory) and a heap of 512 MB for
// each broker.
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("rocketmq-%d", port)),
		Port: port, Brokers: brokers, HeapMB: 512}
}

// Kind is the local.Kind of RocketMQ 5. One broker is a name server in
// one JVM (node 101, its "namesrv" port) and the broker with its proxy
// in another, as the proxy's local mode runs them (node 1), both on
// 127.0.0.1. More brokers are a cluster: the name server (node 101, on
// 127.0.2.1), broker i alone in its JVM on 127.0.1.i (node i, broker
// name broker-i, a master: brokerId 0, no slave), and one proxy in
// cluster mode (node 102, on 127.0.2.2), through which clients reach
// every broker. The proxy's gRPC endpoint is on its "client" port and
// its remoting endpoint on "proxy-remoting"; a broker's remoting
// protocol is on "remoting" (and on the port two below, RocketMQ's
// "fast" channel), its replication on "ha", its Prometheus metrics on
// "metrics". The proxy's two endpoints and a broker's replication port
// are bound on every address, which RocketMQ has no setting to change:
// outside a network namespace of its own, the cluster serves them to
// the machine's network. Each broker keeps its store, and every JVM its
// logs, in its node's directory.
type Kind struct{}

var _ local.RestartInOrder = Kind{}

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

// OpenListeners implements local.Securer: the plain listener, since the
// proxy takes plaintext beside TLS on its gRPC port and checks no user
// (see Listeners).
func (Kind) OpenListeners() []string { return []string{"plain"} }

// The ids of the nodes that are not brokers (brokers are 1 to N).
const (
	namesrvID = 101
	proxyID   = 102 // a cluster's proxy; one broker's runs in its JVM
)

// proxyHeapMB is the heap of a cluster's proxy, which holds no messages.
const proxyHeapMB = 256

// clusterName is the local brokers' cluster, the driver's default.
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

// Layout implements local.Kind: the name server node first, as it starts
// first, then the broker nodes, then a cluster's proxy node (one
// broker's proxy is its broker node's). On the proxy's usual port, 8081,
// the name server is on its usual port, 9876, where free (OMB's RocketMQ
// files and RocketMQ's own tools name it).
func (Kind) Layout(c *local.Cluster) []*local.Node {
	single := c.Brokers == 1
	namesrvPort := 0
	if c.Port == usualPort {
		namesrvPort = usualNamesrvPort
	}
	dir := func(id int) string { return filepath.Join(c.StateDir, fmt.Sprintf("node-%d", id)) }
	nodes := []*local.Node{{ID: namesrvID, Roles: []string{"namesrv"}, Host: local.LoopbackHost(single, true, 1), Dir: dir(namesrvID),
		Ports: map[string]int{"namesrv": namesrvPort}}}
	for i := 1; i <= c.Brokers; i++ {
		nodes = append(nodes, &local.Node{ID: i, Roles: []string{"broker"}, Host: local.LoopbackHost(single, false, i), Dir: dir(i),
			Ports: map[string]int{"remoting": 0, "ha": 0, "metrics": 0}, EveryAddress: []string{"ha"}})
	}
	proxy := nodes[1]
	if !single {
		proxy = &local.Node{ID: proxyID, Host: local.LoopbackHost(false, true, 2), Dir: dir(proxyID), Ports: map[string]int{}}
		nodes = append(nodes, proxy)
	}
	proxy.Roles = append(proxy.Roles, "proxy")
	proxy.Ports["client"], proxy.Ports["proxy-remoting"] = 0, 0
	proxy.EveryAddress = append(proxy.EveryAddress, "client", "proxy-remoting")
	return nodes
}

// withRole returns the nodes of c that have role.
func withRole(c *local.Cluster, role string) []*local.Node {
	var nodes []*local.Node
	for _, n := range c.Nodes() {
		if n.HasRole(role) {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// brokerName is the broker name of broker node b.
func brokerName(b *local.Node) string { return fmt.Sprintf("broker-%d", b.ID) }

// Configure implements local.Kind: the name server's properties, each
// broker's and the proxy's config. A broker's remoting port must have
// its "fast" channel's port, two below, free.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	ns, brokers, proxies := c.Node(namesrvID), withRole(c, "broker"), withRole(c, "proxy")
	if ns == nil || len(brokers) == 0 || len(proxies) != 1 {
		return fmt.Errorf("a local RocketMQ cluster has a name server node, broker nodes and one proxy, the layout has %d nodes", len(c.Nodes()))
	}
	type file struct {
		n          *local.Node
		name, text string
	}
	files := []file{{ns, "namesrv.properties", namesrvConfig(ns)}, {proxies[0], "proxy.json", proxyConfig(c, proxies[0], ns)}}
	for _, b := range brokers {
		if fast := b.Ports["remoting"] - 2; !free(b.Host, fast) {
			return fmt.Errorf("port %d on %s, broker %d's fast channel (its remoting port %d less 2), is in use: %w", fast, b.Host, b.ID, b.Ports["remoting"], local.ErrPortInUse)
		}
		files = append(files, file{b, "broker.conf", brokerConfig(c, b, ns)})
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
	return fmt.Sprintf("# Written by brokerbench: the name server of a local RocketMQ cluster.\nlistenPort=%d\nbindAddress=%s\n", ns.Ports["namesrv"], ns.Host)
}

// brokerConfig is broker node b's properties: its own broker name, a
// master (brokerId 0) of the cluster, its listeners on the node's address
// (but its replication port, bound on every address), its store in the
// node's directory, registered with the name server every 10 s
// (RocketMQ's shortest period) so that a broker started before its name
// server is soon known. Topics are created by the driver, never on first
// use.
func brokerConfig(c *local.Cluster, b, ns *local.Node) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Written by brokerbench: broker %d of a local RocketMQ cluster of %d.\n", b.ID, c.Brokers)
	fmt.Fprintf(&s, "brokerClusterName=%s\nbrokerName=%s\nbrokerId=0\n", clusterName, brokerName(b))
	fmt.Fprintf(&s, "brokerIP1=%s\nbindAddress=%[1]s\nlistenPort=%d\nhaListenPort=%d\n", b.Host, b.Ports["remoting"], b.Ports["ha"])
	fmt.Fprintf(&s, "namesrvAddr=%s\n", ns.Addr("namesrv"))
	store := filepath.Join(b.Dir, "store")
	fmt.Fprintf(&s, "storePathRootDir=%s\nstorePathCommitLog=%s\n", store, filepath.Join(store, "commitlog"))
	s.WriteString("autoCreateTopicEnable=false\nregisterNameServerPeriod=10000\n")
	fmt.Fprintf(&s, "metricsExporterType=PROM\nmetricsPromExporterHost=%s\nmetricsPromExporterPort=%d\n", b.Host, b.Ports["metrics"])
	return s.String()
}

// proxyConfig is proxy node p's JSON config: in local mode beside its
// broker when p is also the broker node, else in cluster mode, reaching
// the brokers the name server routes to. It stops within 3 s rather
// than the 30 s it gives its gRPC calls by default. Serving "tls", its
// certificate is the node's of the cluster's authority; else the one it
// makes itself at start (its test mode), which no client can check.
func proxyConfig(c *local.Cluster, p, ns *local.Node) string {
	mode := "cluster"
	if p.HasRole("broker") {
		mode = "local"
	}
	conf := map[string]any{"rocketMQClusterName": clusterName, "proxyMode": mode, "grpcServerPort": p.Ports["client"],
		"remotingListenPort": p.Ports["proxy-remoting"], "namesrvAddr": ns.Addr("namesrv"), "grpcShutdownTimeSeconds": 3}
	if sec := c.Security(); sec != nil && c.Serving("tls") {
		conf["tlsTestModeEnable"], conf["tlsKeyPath"], conf["tlsCertPath"] = false, sec.NodeKeyStore(p), sec.NodeKeyStore(p)
	}
	text, _ := json.Marshal(conf)
	return string(text) + "\n"
}

// Command implements local.Kind: the name server with a heap of 128 MB;
// a broker alone, with a heap of HeapMB and as much direct memory; one
// broker's proxy in local mode, the broker in the same JVM, sized as a
// broker; a cluster's proxy in cluster mode with a heap of 256 MB.
// user.home is the node's directory, where RocketMQ writes its logs.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	classpath := filepath.Join(libDir(c.CacheDir), "*")
	java := func(heapMB int, args ...string) []string {
		return append([]string{"java", fmt.Sprintf("-Xms%dm", heapMB), fmt.Sprintf("-Xmx%dm", heapMB), "-XX:+UseG1GC", "-Duser.home=" + n.Dir}, args...)
	}
	direct := fmt.Sprintf("-XX:MaxDirectMemorySize=%dm", c.HeapMB)
	proxyConf := "-Dcom.rocketmq.proxy.configPath=" + n.ConfigFile("proxy.json")
	switch {
	case n.ID == namesrvID:
		return java(128, "-cp", classpath, "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", n.ConfigFile("namesrv.properties"))
	case n.HasRole("broker") && n.HasRole("proxy"):
		return java(c.HeapMB, direct, proxyConf, "-cp", classpath, "org.apache.rocketmq.proxy.ProxyStartup", "-pm", "local", "-bc", n.ConfigFile("broker.conf"))
	case n.HasRole("proxy"):
		return java(proxyHeapMB, proxyConf, "-cp", classpath, "org.apache.rocketmq.proxy.ProxyStartup", "-pm", "cluster")
	}
	return java(c.HeapMB, direct, "-cp", classpath, "org.apache.rocketmq.broker.BrokerStartup", "-c", n.ConfigFile("broker.conf"))
}

// Environ implements local.Environer: ROCKETMQ_HOME, which RocketMQ's
// processes refuse to start without, is the node's directory.
func (Kind) Environ(c *local.Cluster, n *local.Node) []string {
	return []string{"ROCKETMQ_HOME=" + n.Dir}
}

// NodeReady implements local.StartInOrder: the name server starts first
// and serves before the brokers start, so that they register at once
// rather than at their next period (10 s); the brokers start together,
// and the last one is ready once the name server routes to every broker:
// a cluster's proxy, which starts next, creates its system topic on the
// cluster's brokers as it starts, and exits if none is registered.
func (Kind) NodeReady(ctx context.Context, c *local.Cluster, n *local.Node) error {
	brokers := withRole(c, "broker")
	switch {
	case n.ID == namesrvID:
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", n.Addr("namesrv"))
		if err != nil {
			return fmt.Errorf("name server: %w", err)
		}
		return conn.Close()
	case n == brokers[len(brokers)-1]:
		return routed(ctx, c, brokers)
	}
	return nil
}

// RestartsInOrder implements local.RestartInOrder: the name server keeps
// no routes, so a cluster started again with its data has its brokers
// register before its proxy starts, as a new one does.
func (Kind) RestartsInOrder() bool { return true }

// routed returns nil once the cluster's name server routes the cluster
// to every one of brokers at its remoting address.
func routed(ctx context.Context, c *local.Cluster, brokers []*local.Node) error {
	a := &admin{namesrv: []string{c.Node(namesrvID).Addr("namesrv")}, cluster: clusterName, dial: (&net.Dialer{}).DialContext}
	r, err := a.brokers(ctx)
	if err != nil {
		return err
	}
	masters := r.masters()
	var missing []string
	for _, b := range brokers {
		if masters[brokerName(b)] != b.Addr("remoting") {
			missing = append(missing, fmt.Sprintf("%d at %s", b.ID, b.Addr("remoting")))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the name server routes to %d of %d brokers; not yet to broker %s", len(brokers)-len(missing), len(brokers), strings.Join(missing, ", "))
	}
	return nil
}

// Ready implements local.Kind: the name server routes the cluster to
// every broker, and the proxy accepts connections.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	if err := routed(ctx, c, withRole(c, "broker")); err != nil {
		return err
	}
	for _, p := range withRole(c, "proxy") {
		conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", p.Addr("client"))
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		_ = conn.Close()
	}
	return nil
}

// localEndpoints are the addresses a driver is given of a running local
// cluster: the proxy's gRPC endpoint, then the name server's, then the
// cluster's name.
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
	return append(append(proxies, servers...), clusterScheme+clusterName)
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
