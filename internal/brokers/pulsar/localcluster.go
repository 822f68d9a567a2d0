package pulsar

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
)

// clusterName is the name of a local Pulsar cluster of several brokers:
// OMB's driver files ask for a tenant on the cluster "local".
const clusterName = "local"

// zookeeperNodeID is the id of a cluster's ZooKeeper node, after the
// brokers' as Kafka's dedicated controllers' are.
const zookeeperNodeID = 101

// zookeeperHeapMB is the ZooKeeper node's heap: it holds the metadata of
// one cluster's topics and ledgers.
const zookeeperHeapMB = 128

// zookeeperConfig is the ZooKeeper node's config: a single server on the
// node's address, which answers "ruok" (see NodeReady).
func zookeeperConfig(n *local.Node) string {
	return fmt.Sprintf(`# Written by brokerbench: the metadata store of a local Pulsar cluster.
tickTime=2000
initLimit=10
syncLimit=5
dataDir=%s/data
clientPort=%d
clientPortAddress=%s
admin.enableServer=false
4lw.commands.whitelist=ruok
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
`, n.Dir, n.Ports["zookeeper"], n.Host)
}

// zookeeperNode is the ZooKeeper node among nodes, or nil.
func zookeeperNode(nodes []*local.Node) *local.Node {
	for _, n := range nodes {
		if n.HasRole("zookeeper") {
			return n
		}
	}
	return nil
}

// brokerConfig is broker node n's broker.conf: cluster "local" on
// ZooKeeper node zk, its ledgers on min(3, brokers) bookies by default.
func brokerConfig(c *local.Cluster, n, zk *local.Node) string {
	store := "zk:" + zk.Addr("zookeeper")
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by brokerbench: broker %d of a %d-broker Pulsar cluster on loopback.\n", n.ID, c.Brokers)
	fmt.Fprintf(&b, "clusterName=%s\nmetadataStoreUrl=%s\nconfigurationMetadataStoreUrl=%[2]s\n", clusterName, store)
	writeBrokerSettings(&b, c, n, persistenceFor(min(3, c.Brokers)))
	// A cluster's nodes stop together: a broker closing its ledgers on
	// bookies that are gone halts after 10 s, not after Pulsar's 60 s,
	// longer than brokerbench waits before a SIGKILL.
	b.WriteString("brokerShutdownTimeoutMs=10000\n")
	// A namespace's bundles stay on the brokers they were assigned to:
	// a bundle split or shed under a run's load moves its topics, whose
	// message-in counters (the written count) start again from zero on
	// their new broker, and whose consumers are sent again what they had
	// not acknowledged.
	b.WriteString("loadBalancerAutoBundleSplitEnabled=false\nloadBalancerAutoUnloadSplitBundlesEnabled=false\nloadBalancerSheddingEnabled=false\n")
	return b.String()
}

// bookieConfig is broker node n's bookkeeper.conf: its bookie on the
// node's address, registered in ZooKeeper node zk, its journal and
// ledgers in the node's directory, stored as Pulsar's bookies store them
// (DbLedgerStorage) with caches sized for a node of HeapMB (they are
// direct memory, which the broker shares).
func bookieConfig(c *local.Cluster, n, zk *local.Node) string {
	cacheMB := max(16, c.HeapMB/8)
	return fmt.Sprintf(`# Written by brokerbench: the bookie of broker %d of a %d-broker Pulsar cluster on loopback.
bookiePort=%d
advertisedAddress=%s
listeningInterface=lo
allowLoopback=true
metadataServiceUri=zk+hierarchical://%s/ledgers
journalDirectories=%s/bookkeeper/journal
ledgerDirectories=%[6]s/bookkeeper/ledgers
ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage
dbStorage_writeCacheMaxSizeMb=%d
dbStorage_readAheadCacheMaxSizeMb=%[7]d
dbStorage_rocksDB_blockCacheSize=%d
httpServerEnabled=false
`, n.ID, c.Brokers, n.Ports["bookie"], n.Host, zk.Addr("zookeeper"), n.Dir, cacheMB, cacheMB<<20)
}

// StopsLast implements local.LastToStop: the ZooKeeper node stops once
// the brokers have unregistered from it.
func (Kind) StopsLast(n *local.Node) bool { return n.HasRole("zookeeper") }

// NodeReady implements local.StartInOrder: the ZooKeeper node serves
// once it answers "ruok" with "imok". A broker node is not waited for:
// the brokers start together once the cluster's metadata is written
// (Initialize), and Ready waits for them.
func (Kind) NodeReady(ctx context.Context, c *local.Cluster, n *local.Node) error {
	if !n.HasRole("zookeeper") {
		return nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", n.Addr("zookeeper"))
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return err
	}
	answer, err := io.ReadAll(io.LimitReader(conn, 16))
	if err != nil {
		return err
	}
	if string(answer) != "imok" {
		return fmt.Errorf("ZooKeeper answers %q to ruok", answer)
	}
	return nil
}

// Initialize implements local.Initializer: once a new cluster's
// ZooKeeper node serves, PulsarClusterMetadataSetup writes cluster
// "local" (its brokers' URLs, over TLS too when it serves "tls"), the
// BookKeeper metadata the bookies register in, and the public/default
// namespace, before any broker starts.
func (Kind) Initialize(ctx context.Context, c *local.Cluster, n *local.Node) error {
	if !n.HasRole("zookeeper") {
		return nil
	}
	var web, service, webTLS, serviceTLS []string
	for _, b := range c.Nodes() {
		if b.HasRole("broker") {
			web = append(web, b.Addr("http"))
			service = append(service, b.Addr(c.ListenerKey("plain")))
			webTLS = append(webTLS, b.Addr("https"))
			serviceTLS = append(serviceTLS, b.Addr(c.ListenerKey("tls")))
		}
	}
	store := "zk:" + n.Addr("zookeeper")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	argv := append(java(c, n, 256), "org.apache.pulsar.PulsarClusterMetadataSetup", "--cluster", clusterName,
		"--metadata-store", store, "--configuration-metadata-store", store,
		"--web-service-url", "http://"+strings.Join(web, ","))
	if c.Serving("plain") {
		argv = append(argv, "--broker-service-url", "pulsar://"+strings.Join(service, ","))
	}
	if c.Serving("tls") {
		argv = append(argv, "--web-service-url-tls", "https://"+strings.Join(webTLS, ","), "--broker-service-url-tls", "pulsar+ssl://"+strings.Join(serviceTLS, ","))
	}
	if c.Log != nil {
		fmt.Fprintf(c.Log, "writing cluster %q into ZooKeeper at %s (PulsarClusterMetadataSetup)\n", clusterName, n.Addr("zookeeper"))
	}
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("write the Pulsar cluster's metadata into ZooKeeper at %s: %w\n%s", n.Addr("zookeeper"), err, local.LastLines(string(out), 20))
	}
	return nil
}

// clusterReady returns nil once every one of brokers of c is registered
// in the cluster, as each of them sees it, and a topic's lookup names
// one of them.
func clusterReady(ctx context.Context, c *local.Cluster, brokers []*local.Node) error {
	var want []string
	for _, n := range brokers {
		want = append(want, n.Addr("http"))
	}
	slices.Sort(want)
	for _, n := range brokers {
		a, err := localAdmin(c, "http://"+n.Addr("http"))
		if err != nil {
			return err
		}
		var active []string
		if err := a.do(ctx, http.MethodGet, "/admin/v2/brokers/"+clusterName, nil, &active); err != nil {
			return fmt.Errorf("node %d: %w", n.ID, err)
		}
		slices.Sort(active)
		if !slices.Equal(active, want) {
			return fmt.Errorf("node %d sees brokers %v registered, of %v", n.ID, active, want)
		}
	}
	var lookup struct {
		BrokerURL    string `json:"brokerUrl"`
		BrokerURLTLS string `json:"brokerUrlTls"`
	}
	a, err := localAdmin(c, "http://"+brokers[0].Addr("http"))
	if err != nil {
		return err
	}
	if err := a.do(ctx, http.MethodGet, "/lookup/v2/topic/persistent/public/default/brokerbench-ready", nil, &lookup); err != nil {
		return fmt.Errorf("topic lookup: %w", err)
	}
	for _, n := range brokers {
		if lookup.BrokerURL == "pulsar://"+n.Addr(c.ListenerKey("plain")) || lookup.BrokerURL == "" && lookup.BrokerURLTLS == "pulsar+ssl://"+n.Addr(c.ListenerKey("tls")) {
			return nil
		}
	}
	return fmt.Errorf("a topic's lookup names %q, none of the cluster's brokers", cmp.Or(lookup.BrokerURL, lookup.BrokerURLTLS))
}
