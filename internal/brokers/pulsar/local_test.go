package pulsar

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/pki"
	"github.com/brokerbench/brokerbench/internal/workload"
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

// TestLocalCluster: three brokers are a cluster named "local": the
// ZooKeeper node first, on 127.0.2.1, then broker i with its bookie on
// 127.0.1.i; every broker and bookie finds ZooKeeper, listens on its
// node's address and ports, keeps its data in its directory, and writes
// ledgers to 3 bookies, acknowledged by 2; ZooKeeper stops last; a
// driver is given the brokers' addresses alone.
func TestLocalCluster(t *testing.T) {
	c := NewLocal(6650, 3)
	c.StateDir = t.TempDir()
	if c.HeapMB != 512 {
		t.Errorf("heap %d MB, want 512 for each broker of a cluster", c.HeapMB)
	}
	nodes := Kind{}.Layout(c)
	var hosts []string
	for _, n := range nodes {
		hosts = append(hosts, fmt.Sprintf("%d:%s:%s", n.ID, strings.Join(n.Roles, "+"), n.Host))
	}
	if want := []string{"101:zookeeper:127.0.2.1", "1:broker+bookie:127.0.1.1", "2:broker+bookie:127.0.1.2", "3:broker+bookie:127.0.1.3"}; !slices.Equal(hosts, want) {
		t.Fatalf("layout %v, want %v", hosts, want)
	}
	zk, b2 := nodes[0], nodes[2]
	zk.Ports = map[string]int{"zookeeper": 41181}
	for i, n := range nodes[1:] {
		n.Ports = map[string]int{"client": 6650, "http": 41080 + i, "bookie": 41200 + i}
	}
	for _, f := range []struct {
		node       *local.Node
		file, text string
		want       []string
	}{
		{zk, "zookeeper.conf", zookeeperConfig(zk), []string{"clientPort=41181\n", "clientPortAddress=127.0.2.1\n", "dataDir=" + zk.Dir + "/data\n", "4lw.commands.whitelist=ruok\n", "admin.enableServer=false\n"}},
		{b2, "broker.conf", brokerConfig(c, b2, zk), []string{"clusterName=local\n", "metadataStoreUrl=zk:127.0.2.1:41181\n", "configurationMetadataStoreUrl=zk:127.0.2.1:41181\n",
			"advertisedAddress=127.0.1.2\n", "bindAddress=127.0.1.2\n", "brokerServicePort=6650\n", "webServicePort=41081\n",
			"managedLedgerDefaultEnsembleSize=3\n", "managedLedgerDefaultWriteQuorum=3\n", "managedLedgerDefaultAckQuorum=2\n",
			"exposeTopicLevelMetricsInPrometheus=false\n", "functionsWorkerEnabled=false\n", "brokerShutdownTimeoutMs=10000\n",
			"loadBalancerAutoBundleSplitEnabled=false\n", "loadBalancerSheddingEnabled=false\n"}},
		{b2, "bookkeeper.conf", bookieConfig(c, b2, zk), []string{"bookiePort=41201\n", "advertisedAddress=127.0.1.2\n", "listeningInterface=lo\n", "allowLoopback=true\n",
			"metadataServiceUri=zk+hierarchical://127.0.2.1:41181/ledgers\n", "journalDirectories=" + b2.Dir + "/bookkeeper/journal\n",
			"ledgerDirectories=" + b2.Dir + "/bookkeeper/ledgers\n", "ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage\n",
			"dbStorage_writeCacheMaxSizeMb=64\n", "dbStorage_rocksDB_blockCacheSize=67108864\n"}},
	} {
		for _, want := range f.want {
			if !strings.Contains(f.text, want) {
				t.Errorf("node %d %s lacks %q:\n%s", f.node.ID, f.file, strings.TrimSpace(want), f.text)
			}
		}
	}
	for _, cmd := range []struct {
		node *local.Node
		want []string
	}{
		{zk, []string{"-Xmx128m", "org.apache.zookeeper.server.quorum.QuorumPeerMain " + zk.ConfigFile("zookeeper.conf")}},
		{b2, []string{"-Xmx512m", "-XX:MaxDirectMemorySize=512m", "org.apache.pulsar.PulsarBrokerStarter", "--broker-conf " + b2.ConfigFile("broker.conf"),
			"--run-bookie --bookie-conf " + b2.ConfigFile("bookkeeper.conf")}},
	} {
		line := strings.Join(Kind{}.Command(c, cmd.node), " ")
		for _, want := range append(cmd.want, cmd.node.Marker()) {
			if !strings.Contains(line, want) {
				t.Errorf("node %d's command lacks %q: %s", cmd.node.ID, want, line)
			}
		}
	}
	if got := (Kind{}).MetricsURL(c, zk); got != "" {
		t.Errorf("ZooKeeper's metrics at %q, want none", got)
	}
	if got := (Kind{}).MetricsURL(c, b2); got != "http://127.0.1.2:41081/metrics/" {
		t.Errorf("broker 2's metrics at %q", got)
	}
	if !(Kind{}).StopsLast(zk) || (Kind{}).StopsLast(b2) {
		t.Error("ZooKeeper must stop last, and the brokers before it")
	}
	var st local.Status
	for _, n := range nodes {
		st.Nodes = append(st.Nodes, local.NodeStatus{Node: *n})
	}
	want := []string{"pulsar://127.0.1.1:6650", "pulsar://127.0.1.2:6650", "pulsar://127.0.1.3:6650", "http://127.0.1.1:41080", "http://127.0.1.2:41081", "http://127.0.1.3:41082"}
	if got := localEndpoints(st, ""); !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	cfg, err := parseConfig(ombDriver(t, "pulsar.yaml"), want, nil)
	if err != nil || cfg.serviceURL != "pulsar://127.0.1.1:6650,127.0.1.2:6650,127.0.1.3:6650" || cfg.persistence != (persistence{3, 3, 2}) || cfg.clusters[0] != clusterName {
		t.Errorf("OMB's pulsar.yaml given the cluster's endpoints: %+v, %v", cfg, err)
	}
}

// TestLocalNodeSecured: a secured standalone node serves the binary
// protocol and the admin API over TLS on ports of their own besides its
// plain ones, asks every client for a token its key signed, and its own
// client presents the user's; a driver of its tls listener is given
// pulsar+ssl:// and https:// addresses.
func TestLocalNodeSecured(t *testing.T) {
	c := NewLocal(6650, 1)
	c.StateDir, c.Listeners = t.TempDir(), []string{"plain", "tls"}
	nodes := Kind{}.Layout(c)
	n := nodes[0]
	if _, ok := n.Ports["tls"]; !ok || n.Ports["https"] != usualHTTPSPort || n.Ports["http"] != usualHTTPPort {
		t.Fatalf("ports %v: want a tls port, https on 8443 and http on 8080", n.Ports)
	}
	n.Ports = map[string]int{"client": 6650, "tls": 6651, "http": 8080, "https": 8443, "bookie": 41181}
	sec := c.Security()
	conf := standaloneConfig(c, n)
	for _, want := range []string{"brokerServicePort=6650\n", "webServicePort=8080\n", "brokerServicePortTls=6651\n", "webServicePortTls=8443\n",
		"tlsCertificateFilePath=" + nodeCertFile(sec, n) + "\n", "tlsKeyFilePath=" + nodeKeyFile(sec, n) + "\n", "tlsTrustCertsFilePath=" + sec.CAFile + "\n",
		"authenticationEnabled=true\n", "authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken\n",
		"tokenSecretKey=file://" + sec.Dir + "/" + tokenKeyFile + "\n", "superUserRoles=brokerbench\n",
		"brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n",
		"brokerClientAuthenticationParameters=file://" + sec.Dir + "/" + brokerTokenFile + "\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("standalone.conf lacks %q:\n%s", strings.TrimSpace(want), conf)
		}
	}
	if strings.Contains(conf, "brokerClientTlsEnabled") {
		t.Errorf("the broker's own client uses TLS although the plain listener is served:\n%s", conf)
	}
	st := local.Status{Bootstrap: []string{"127.0.0.1:6650"}, Listeners: c.Listeners, Nodes: []local.NodeStatus{{Node: *n}}}
	for listener, want := range map[string][]string{
		"":      {"pulsar://127.0.0.1:6650", "http://127.0.0.1:8080"},
		"plain": {"pulsar://127.0.0.1:6650", "http://127.0.0.1:8080"},
		"tls":   {"pulsar+ssl://127.0.0.1:6651", "https://127.0.0.1:8443"},
	} {
		if got := localEndpoints(st, listener); !slices.Equal(got, want) {
			t.Errorf("endpoints of listener %q: %v, want %v", listener, got, want)
		}
	}
	if got := localListener(&workload.DriverConfig{Common: workload.Properties{{Key: "tls", Value: "true"}}}); got != "tls" {
		t.Errorf("a driver config asking for TLS connects to listener %q", got)
	}

	// Served over TLS alone, the node has no plain binary port, and its
	// own client goes over TLS.
	c.Listeners = []string{"tls"}
	n.Ports = map[string]int{"client": 6651, "http": 8080, "https": 8443, "bookie": 41181}
	conf = standaloneConfig(c, n)
	for _, want := range []string{"brokerServicePort=\n", "brokerServicePortTls=6651\n", "brokerClientTlsEnabled=true\n", "brokerClientTrustCertsFilePath=" + sec.CAFile + "\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("standalone.conf over TLS alone lacks %q:\n%s", strings.TrimSpace(want), conf)
		}
	}
}

// TestLocalTokens: a token is signed with a key of the cluster's
// password, 256 bits as Pulsar asks, and names the user; a driver given
// the local cluster's credentials presents it.
func TestLocalTokens(t *testing.T) {
	if k := tokenKey("password"); len(k) != 32 || string(k) == string(tokenKey("other")) {
		t.Fatalf("token key %x: want 32 bytes of the password's own", k)
	}
	token, err := localToken("brokerbench", "password")
	if err != nil {
		t.Fatal(err)
	}
	for pw, valid := range map[string]bool{"password": true, "other": false} {
		claims := jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return tokenKey(pw), nil }, jwt.WithValidMethods([]string{"HS256"}))
		if (err == nil) != valid || valid && claims.Subject != "brokerbench" {
			t.Errorf("token checked with the key of %q: %v, subject %q", pw, err, claims.Subject)
		}
	}
	cfg, err := parseConfig(&workload.DriverConfig{Name: "pulsar", Source: "test", ReplicationFactor: 1}, nil, &driver.Credentials{Username: "brokerbench", Password: "password"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"token":"` + token + `"}`; cfg.authPlugin != "token" || cfg.authData != want {
		t.Errorf("a driver of the local cluster authenticates with %s %s, want token %s", cfg.authPlugin, cfg.authData, want)
	}
}

// TestPulsarKeyPair: a node's key store becomes the certificate chain
// and the PKCS#8 key Pulsar reads, which make a key pair again.
func TestPulsarKeyPair(t *testing.T) {
	ca, err := pki.NewAuthority("test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("node", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := leaf.KeyStorePEM(ca)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "node.pem")
	if err := os.WriteFile(file, ks, 0o600); err != nil {
		t.Fatal(err)
	}
	certs, key, err := pulsarKeyPair(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(key)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("key %q: want a PKCS#8 PEM", key)
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		t.Errorf("key: %v", err)
	}
	pair, err := tls.X509KeyPair(certs, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Errorf("chain of %d certificates, want the node's and the authority's", len(pair.Certificate))
	}
}
