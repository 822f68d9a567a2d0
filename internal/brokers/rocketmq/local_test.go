package rocketmq

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
)

// TestLocalNode: the broker's, the proxy's and the name server's configs
// and commands put every listener on the node's address and ports, the
// store and logs in the node's directory, and a driver is given the
// proxy and the name server.
func TestLocalNode(t *testing.T) {
	c := NewLocal(8081, 1)
	c.StateDir = t.TempDir()
	nodes := Kind{}.Layout(c)
	if len(nodes) != 2 || nodes[0].ID != namesrvID || nodes[1].ID != 1 || nodes[0].Host != "127.0.0.1" || nodes[1].Host != "127.0.0.1" {
		t.Fatalf("layout %+v", nodes)
	}
	ns, b := nodes[0], nodes[1]
	if !b.HasRole("broker") || !b.HasRole("proxy") || ns.Ports["namesrv"] != usualNamesrvPort {
		t.Errorf("node 1 is %v, the name server prefers port %d: want the broker with its proxy, 9876", b.Roles, ns.Ports["namesrv"])
	}
	// The proxy's endpoints and the broker's replication port are bound on
	// every address.
	if !slices.Equal(slices.Sorted(slices.Values(b.EveryAddress)), []string{"client", "ha", "proxy-remoting"}) {
		t.Errorf("listeners on every address %v", b.EveryAddress)
	}
	b.Ports = map[string]int{"client": 8081, "remoting": 41911, "ha": 41912, "proxy-remoting": 41080, "metrics": 41557}
	ns.Ports = map[string]int{"namesrv": 41876}
	conf := brokerConfig(c, b, ns)
	for _, want := range []string{"brokerClusterName=DefaultCluster\n", "brokerName=broker-1\n", "brokerId=0\n", "brokerIP1=127.0.0.1\n", "bindAddress=127.0.0.1\n",
		"listenPort=41911\n", "haListenPort=41912\n", "namesrvAddr=127.0.0.1:41876\n", "storePathRootDir=" + b.Dir + "/store\n",
		"autoCreateTopicEnable=false\n", "metricsExporterType=PROM\n", "metricsPromExporterPort=41557\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("broker.conf lacks %q:\n%s", strings.TrimSpace(want), conf)
		}
	}
	if p := proxyConfig(c, b, ns); !strings.Contains(p, `"proxyMode":"local"`) || !strings.Contains(p, `"grpcServerPort":8081`) || !strings.Contains(p, `"remotingListenPort":41080`) || strings.Contains(p, "tlsKeyPath") {
		t.Errorf("proxy config %s", p)
	}
	if n := namesrvConfig(ns); !strings.Contains(n, "listenPort=41876\n") || !strings.Contains(n, "bindAddress=127.0.0.1\n") {
		t.Errorf("name server config %s", n)
	}
	for _, n := range nodes {
		cmd := strings.Join(Kind{}.Command(c, n), " ")
		if !strings.Contains(cmd, n.Marker()) {
			t.Errorf("command %s does not name the node's directory", cmd)
		}
	}
	if cmd := strings.Join(Kind{}.Command(c, b), " "); !strings.Contains(cmd, "-Xmx512m") || !strings.Contains(cmd, "org.apache.rocketmq.proxy.ProxyStartup -pm local -bc "+b.ConfigFile("broker.conf")) {
		t.Errorf("broker command %s", cmd)
	}
	if env := (Kind{}).Environ(c, ns); !slices.Equal(env, []string{"ROCKETMQ_HOME=" + ns.Dir}) {
		t.Errorf("environment %v", env)
	}
	st := local.Status{Bootstrap: []string{"127.0.0.1:8081"}, Nodes: []local.NodeStatus{{Node: *ns}, {Node: *b}}}
	m, _ := brokers.Lookup("rocketmq")
	want := []string{"127.0.0.1:8081", "namesrv://127.0.0.1:41876", "cluster://DefaultCluster"}
	if got := m.LocalEndpoints(st, ""); !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	cfg, err := parseConfig(ombDriver(t, "omb-rocketmq5-driver.yaml"), want, nil)
	if err != nil || cfg.grpcEndpoint != "127.0.0.1:8081" || cfg.namesrv[0] != "127.0.0.1:41876" || cfg.cluster != clusterName {
		t.Errorf("a driver of OMB's file (clusterName a placeholder) given the node's endpoints: %+v, %v", cfg, err)
	}
}

// TestLocalCluster: three brokers are the name server on 127.0.2.1,
// broker i alone on 127.0.1.i, each a master of its own name in the one
// cluster, registered with the name server, and one proxy in cluster
// mode on 127.0.2.2, which a driver is given with the name server.
func TestLocalCluster(t *testing.T) {
	c := NewLocal(8081, 3)
	c.StateDir = t.TempDir()
	nodes := Kind{}.Layout(c)
	var layout []string
	for _, n := range nodes {
		layout = append(layout, fmt.Sprintf("%d %s %s", n.ID, strings.Join(n.Roles, "+"), n.Host))
	}
	want := []string{"101 namesrv 127.0.2.1", "1 broker 127.0.1.1", "2 broker 127.0.1.2", "3 broker 127.0.1.3", "102 proxy 127.0.2.2"}
	if !slices.Equal(layout, want) {
		t.Fatalf("layout %q, want %q", layout, want)
	}
	ns, proxy := nodes[0], nodes[4]
	ns.Ports = map[string]int{"namesrv": 9876}
	proxy.Ports = map[string]int{"client": 8081, "proxy-remoting": 41080}
	if !slices.Equal(proxy.EveryAddress, []string{"client", "proxy-remoting"}) {
		t.Errorf("the proxy's listeners on every address: %v", proxy.EveryAddress)
	}
	names := map[string]bool{}
	for i, b := range nodes[1:4] {
		b.Ports = map[string]int{"remoting": 42000 + i, "ha": 43000 + i, "metrics": 44000 + i}
		if _, ok := b.Ports["client"]; ok || b.HasRole("proxy") || !slices.Equal(b.EveryAddress, []string{"ha"}) {
			t.Errorf("broker node %d: roles %v, listeners on every address %v", b.ID, b.Roles, b.EveryAddress)
		}
		conf := brokerConfig(c, b, ns)
		props := parseProperties(conf)
		if props["brokerClusterName"] != clusterName || props["brokerId"] != "0" || props["brokerIP1"] != b.Host || props["bindAddress"] != b.Host ||
			props["namesrvAddr"] != "127.0.2.1:9876" || props["listenPort"] != fmt.Sprint(42000+i) || props["storePathRootDir"] != b.Dir+"/store" {
			t.Errorf("broker %d's broker.conf:\n%s", b.ID, conf)
		}
		names[props["brokerName"]] = true
		cmd := strings.Join(Kind{}.Command(c, b), " ")
		if !strings.Contains(cmd, "-Xmx512m") || !strings.Contains(cmd, "org.apache.rocketmq.broker.BrokerStartup -c "+b.ConfigFile("broker.conf")) || strings.Contains(cmd, "proxy") {
			t.Errorf("broker %d's command %s", b.ID, cmd)
		}
	}
	if len(names) != 3 {
		t.Errorf("broker names %v: want 3 of their own", names)
	}
	if p := proxyConfig(c, proxy, ns); !strings.Contains(p, `"proxyMode":"cluster"`) || !strings.Contains(p, `"grpcServerPort":8081`) || !strings.Contains(p, `"namesrvAddr":"127.0.2.1:9876"`) {
		t.Errorf("proxy config %s", p)
	}
	if cmd := strings.Join(Kind{}.Command(c, proxy), " "); !strings.Contains(cmd, "-Xmx256m") || !strings.Contains(cmd, "-Dcom.rocketmq.proxy.configPath="+proxy.ConfigFile("proxy.json")) ||
		!strings.HasSuffix(cmd, "org.apache.rocketmq.proxy.ProxyStartup -pm cluster") || !strings.Contains(cmd, proxy.Marker()) {
		t.Errorf("proxy command %s", cmd)
	}
	var st local.Status
	for _, n := range nodes {
		st.Nodes = append(st.Nodes, local.NodeStatus{Node: *n})
	}
	st.Bootstrap = []string{"127.0.2.2:8081"}
	if got, want := localEndpoints(st, ""), []string{"127.0.2.2:8081", "namesrv://127.0.2.1:9876", "cluster://DefaultCluster"}; !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
}
