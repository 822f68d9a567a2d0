package rocketmq

import (
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
	if len(nodes) != 2 || nodes[0].ID != 1 || nodes[1].ID != namesrvID || nodes[0].Host != "127.0.0.1" {
		t.Fatalf("layout %+v", nodes)
	}
	b, ns := nodes[0], nodes[1]
	b.Ports = map[string]int{"client": 8081, "remoting": 41911, "ha": 41912, "proxy-remoting": 41080, "metrics": 41557}
	ns.Ports = map[string]int{"namesrv": 41876}
	conf := brokerConfig(b, ns)
	for _, want := range []string{"brokerClusterName=DefaultCluster\n", "brokerName=broker-1\n", "brokerIP1=127.0.0.1\n", "bindAddress=127.0.0.1\n",
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
	st := local.Status{Bootstrap: []string{"127.0.0.1:8081"}, Nodes: []local.NodeStatus{{Node: *b}, {Node: *ns}}}
	m, _ := brokers.Lookup("rocketmq")
	want := []string{"127.0.0.1:8081", "namesrv://127.0.0.1:41876"}
	if got := m.LocalEndpoints(st, ""); !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	cfg, err := parseConfig(ombDriver(t, "omb-rocketmq5-driver.yaml"), want, nil)
	if err != nil || cfg.grpcEndpoint != "127.0.0.1:8081" || cfg.namesrv[0] != "127.0.0.1:41876" {
		t.Errorf("a driver given the node's endpoints: %+v, %v", cfg, err)
	}
}
