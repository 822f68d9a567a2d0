package pulsar

import (
	"slices"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
)

// TestLocalNode: a standalone node's config and command put every
// listener on the node's own address and ports, its data in its
// directory, and a driver is given its service URL and admin API.
func TestLocalNode(t *testing.T) {
	c := NewLocal(6650, 1)
	c.StateDir = t.TempDir()
	nodes := Kind{}.Layout(c)
	if len(nodes) != 1 || nodes[0].Host != "127.0.0.1" {
		t.Fatalf("layout %+v", nodes)
	}
	n := nodes[0]
	n.Ports = map[string]int{"client": 6650, "http": 41080, "bookie": 41181}
	conf := standaloneConfig(c, n)
	for _, want := range []string{"advertisedAddress=127.0.0.1\n", "bindAddress=127.0.0.1\n", "brokerServicePort=6650\n", "webServicePort=41080\n",
		"bookiePort=41181\n", "listeningInterface=lo\n", "exposeTopicLevelMetricsInPrometheus=false\n", "managedLedgerDefaultEnsembleSize=1\n", "managedLedgerDefaultAckQuorum=1\n", "functionsWorkerEnabled=false\n", "brokerDeleteInactiveTopicsEnabled=false\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("standalone.conf lacks %q:\n%s", strings.TrimSpace(want), conf)
		}
	}
	argv := Kind{}.Command(c, n)
	cmd := strings.Join(argv, " ")
	for _, want := range []string{"-Xmx1024m", "org.apache.pulsar.PulsarStandaloneStarter", "--no-functions-worker", "--bookkeeper-port 41181",
		"--metadata-dir " + n.Dir + "/metadata", "--config " + n.ConfigFile("standalone.conf"), "java.base/sun.nio.ch=ALL-UNNAMED"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command lacks %q: %s", want, cmd)
		}
	}
	if !strings.Contains(cmd, n.Marker()) {
		t.Errorf("command %s does not name the node's directory", cmd)
	}
	if got := (Kind{}).MetricsURL(c, n); got != "http://127.0.0.1:41080/metrics/" {
		t.Errorf("metrics at %s", got)
	}
	st := local.Status{Bootstrap: []string{"127.0.0.1:6650"}, Nodes: []local.NodeStatus{{Node: *n}}}
	m, _ := brokers.Lookup("pulsar")
	if got, want := m.LocalEndpoints(st, ""), []string{"pulsar://127.0.0.1:6650", "http://127.0.0.1:41080"}; !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	cfg, err := parseConfig(ombDriver(t, "pulsar.yaml"), localEndpoints(st, ""), nil)
	if err != nil || cfg.serviceURL != "pulsar://127.0.0.1:6650" || cfg.httpURL != "http://127.0.0.1:41080" {
		t.Errorf("a driver given the node's endpoints: %+v, %v", cfg, err)
	}
}
