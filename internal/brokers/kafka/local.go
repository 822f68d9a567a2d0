package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Version is the Apache Kafka release brokerbench installs unless asked
// for another (Kind.Release).
const Version = "4.3.1"

// oldestRelease is the oldest Kafka release a local cluster runs: the
// config brokerbench writes (KRaft with a static controller quorum,
// SCRAM users added when the storage is formatted) was checked to start
// 3.7.2, 3.8.1, 3.9.1, 4.0.0, 4.1.1, 4.2.0 and 4.3.1.
const oldestRelease = "3.7"

// log4jVersion is the log4j2 binding matching Kafka's slf4j 1.7 API.
const log4jVersion = "2.24.3"

// jmxExporterVersion is the Prometheus JMX exporter agent every broker
// runs with, serving its metrics (the newest release Maven Central serves
// here).
const jmxExporterVersion = "1.0.1"

// NewLocal returns a local Apache Kafka cluster of brokers nodes in KRaft
// mode, its brokers' client listeners on port, with default directories:
// the state of the cluster on a port lives in "kafka-PORT" under the
// state directory. Heap: 1024 MB for a single node, 512 MB per broker in
// a cluster.
func NewLocal(port, brokers int) *local.Cluster {
	heap := 1024
	if brokers > 1 {
		heap = 512
	}
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("kafka-%d", port)),
		Port: port, Brokers: brokers, HeapMB: heap}
}

// Kind is the local.Kind of Apache Kafka clusters in KRaft mode (no ZooKeeper).
// Without dedicated controllers, the first min(3, brokers) brokers are also
// the controller quorum's voters; with them, the controllers are separate
// nodes. Internal topics are replicated as in production: replication
// factor min(3, brokers), min.insync.replicas 2 for transaction state where
// there are 3 or more brokers. The consumer offsets topic has 10
// partitions instead of 50, for start-up time on small machines.
type Kind struct {
	// AdvertisedPort, if not zero, is the client port a single-node
	// cluster tells clients to connect to instead of its own: a proxy in
	// front of it.
	AdvertisedPort int
	// ReleaseVersion is the Kafka release installed and run, each in a
	// directory of its own in the cache; empty: Version.
	ReleaseVersion string
}

// Name implements local.Kind.
func (Kind) Name() string { return "kafka" }

// Product implements local.Kind.
func (Kind) Product() string { return "Apache Kafka" }

// Version implements local.Kind.
func (k Kind) Version() string {
	if k.ReleaseVersion == "" {
		return Version
	}
	return k.ReleaseVersion
}

// Release implements local.Releaser: any Kafka release from 3.7.0 on
// that Maven Central serves ("3.9.1"); whether it does is known when it
// is installed.
func (k Kind) Release(version string) (local.Kind, error) {
	if err := local.CheckRelease("Kafka", version, oldestRelease, "in KRaft mode, without ZooKeeper"); err != nil {
		return nil, err
	}
	k.ReleaseVersion = version
	return k, nil
}

// jmxExporterJar is the Prometheus JMX exporter agent, under cacheDir.
func (k Kind) jmxExporterJar(cacheDir string) string {
	return filepath.Join(cacheDir, "kafka-"+k.Version(), "agent", "jmx_prometheus_javaagent-"+jmxExporterVersion+".jar")
}

// LibDir is where the jars of Kafka release version are, under cacheDir.
func LibDir(cacheDir, version string) string {
	return filepath.Join(cacheDir, "kafka-"+version, "lib")
}

// Install downloads the Kafka release and its dependencies from Maven
// Central into cacheDir, unless already there. It needs Java 17+ and Maven.
func (k Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	v := k.Version()
	what := "Kafka " + v
	if err := local.CheckJava(ctx, what, 17); err != nil {
		return err
	}
	lib := LibDir(cacheDir, v)
	dist := filepath.Dir(lib)
	done := filepath.Join(dist, ".complete")
	if _, err := os.Stat(done); err == nil {
		return k.installJMXExporter(ctx, cacheDir, logf)
	}
	if _, err := local.Maven(what); err != nil {
		return err
	}
	logf("installing Apache Kafka %s from Maven Central into %s (about a minute on first use)", v, dist)
	if err := local.MavenDependencies(ctx, dist, kafkaPOM(v), what); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(lib, "kafka_2.13-"+v+".jar")); err != nil {
		return fmt.Errorf("Maven finished but the Kafka jar is missing in %s", lib)
	}
	if err := os.WriteFile(done, []byte(v+"\n"), 0o644); err != nil {
		return err
	}
	return k.installJMXExporter(ctx, cacheDir, logf)
}

// installJMXExporter downloads the Prometheus JMX exporter agent from
// Maven Central, unless already there.
func (k Kind) installJMXExporter(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	jar := k.jmxExporterJar(cacheDir)
	if _, err := os.Stat(jar); err == nil {
		return nil
	}
	mvn, err := local.Maven("the Prometheus JMX exporter")
	if err != nil {
		return err
	}
	dist := filepath.Dir(LibDir(cacheDir, k.Version()))
	if err := os.WriteFile(filepath.Join(dist, "settings.xml"), []byte(local.MavenSettings), 0o644); err != nil {
		return err
	}
	logf("installing the Prometheus JMX exporter %s from Maven Central into %s", jmxExporterVersion, filepath.Dir(jar))
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-s", "settings.xml", "dependency:copy",
		"-Dartifact=io.prometheus.jmx:jmx_prometheus_javaagent:"+jmxExporterVersion, "-DoutputDirectory="+filepath.Dir(jar))
	cmd.Dir = dist
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("download the Prometheus JMX exporter %s with Maven: %w\n%s", jmxExporterVersion, err, local.LastLines(string(out), 20))
	}
	if _, err := os.Stat(jar); err != nil {
		return fmt.Errorf("Maven finished but %s is missing", jar)
	}
	return nil
}

// Listeners implements local.Securer: Kafka's four security protocols, each on
// a listener of its own, named as the protocol in lower case. Certificates
// are checked (ssl.client.auth) on the ssl listener when clients present
// one; the SASL listeners take PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
func (Kind) Listeners() []string {
	return []string{"plaintext", "ssl", "sasl_plaintext", "sasl_ssl"}
}

// OpenListeners implements local.Securer: the plaintext listener, whose
// protocol is PLAINTEXT and which no authorizer guards (nodeConfig sets
// none); ssl asks for trust in the cluster's authority, the SASL
// listeners for the user's password.
func (Kind) OpenListeners() []string { return []string{"plaintext"} }

// kafkaListenerPorts maps each of the cluster's client listeners to its
// key in a node's ports: the first is "client", the others their own
// names. Brokers talk to each other on the plaintext listener, or on an
// "internal" one when clients have none.
func kafkaListenerPorts(c *local.Cluster) map[string]string {
	keys := map[string]string{}
	for i, l := range c.ServedListeners() {
		keys[l] = l
		if i == 0 {
			keys[l] = "client"
		}
	}
	if _, ok := keys["plaintext"]; !ok {
		keys["internal"] = "internal"
	}
	return keys
}

// Layout implements local.Kind.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	single := c.Brokers == 1 && c.Controllers == 0
	voters := min(3, c.Brokers)
	var nodes []*local.Node
	for i := 1; i <= c.Brokers; i++ {
		n := &local.Node{ID: i, Roles: []string{"broker"}, Host: local.LoopbackHost(single, false, i),
			Ports: map[string]int{}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", i))}
		for _, key := range kafkaListenerPorts(c) {
			n.Ports[key] = 0
		}
		n.Ports["metrics"] = 0 // the JMX exporter's
		if c.Controllers == 0 && i <= voters {
			n.Roles = append(n.Roles, "controller")
			n.Ports["controller"] = 0
		}
		nodes = append(nodes, n)
	}
	for j := 1; j <= c.Controllers; j++ {
		id := 100 + j
		nodes = append(nodes, &local.Node{ID: id, Roles: []string{"controller"}, Host: local.LoopbackHost(false, true, j),
			Ports: map[string]int{"controller": 0}, Dir: filepath.Join(c.StateDir, fmt.Sprintf("node-%d", id))})
	}
	return nodes
}

// Configure implements local.Kind: every node's server.properties and log4j2
// config, and, for fresh nodes, storage formatted with the cluster's id
// (all nodes at once).
func (k Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	var pw string
	if sec := c.Security(); sec != nil {
		var err error
		if pw, err = sec.Password(); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes() {
		// A secured node's config holds the password of its PLAIN users.
		if err := os.WriteFile(n.ConfigFile("server.properties"), []byte(k.nodeConfig(c, n, pw)), 0o600); err != nil {
			return fmt.Errorf("write node %d config: %w", n.ID, err)
		}
		if err := os.WriteFile(n.ConfigFile("log4j2.properties"), []byte(kafkaLog4j), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(n.ConfigFile("jmx-exporter.yaml"), []byte(kafkaJMXRules), 0o644); err != nil {
			return err
		}
	}
	errs := make([]error, len(c.Nodes()))
	var wg sync.WaitGroup
	for i, n := range c.Nodes() {
		if _, err := os.Stat(filepath.Join(n.Dir, "data", "meta.properties")); err == nil && !fresh {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := k.java(c, n, 256, "kafka.tools.StorageTool", "format", "-t", c.ID, "-c", n.ConfigFile("server.properties"))
			if pw != "" && n.HasRole("broker") {
				for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
					args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", mech, local.Username, pw))
				}
			}
			if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("format Kafka storage of node %d: %w\n%s", n.ID, err, local.LastLines(string(out), 10))
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nodeConfig is one node's server.properties; password is the
// secured cluster's user's.
func (k Kind) nodeConfig(c *local.Cluster, n *local.Node, password string) string {
	var voters, listeners, advertised []string
	for _, v := range c.Nodes() {
		if v.HasRole("controller") {
			voters = append(voters, fmt.Sprintf("%d@%s:%d", v.ID, c.AdvertisedHost(v), v.Ports["controller"]))
		}
	}
	protocols := []string{"CONTROLLER:PLAINTEXT"}
	interBroker := "PLAINTEXT"
	ports := kafkaListenerPorts(c)
	for _, l := range slices.Sorted(maps.Keys(ports)) {
		name, protocol := strings.ToUpper(l), strings.ToUpper(l)
		if l == "internal" {
			protocol, interBroker = "PLAINTEXT", "INTERNAL"
		}
		protocols = append(protocols, name+":"+protocol)
		if !n.HasRole("broker") {
			continue
		}
		port := n.Ports[ports[l]]
		listeners = append(listeners, fmt.Sprintf("%s://%s:%d", name, n.Host, port))
		if ports[l] == "client" && k.AdvertisedPort != 0 && c.Brokers == 1 {
			port = k.AdvertisedPort
		}
		advertised = append(advertised, fmt.Sprintf("%s://%s:%d", name, c.AdvertisedHost(n), port))
	}
	if n.HasRole("controller") {
		listeners = append(listeners, "CONTROLLER://"+n.Addr("controller"))
	}
	rf, minISR := min(3, c.Brokers), min(2, c.Brokers)
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by brokerbench: node %d of a %d-broker KRaft cluster on loopback.\n", n.ID, c.Brokers)
	fmt.Fprintf(&b, "process.roles=%s\nnode.id=%d\ncontroller.quorum.voters=%s\n", strings.Join(n.Roles, ","), n.ID, strings.Join(voters, ","))
	fmt.Fprintf(&b, "listeners=%s\n", strings.Join(listeners, ","))
	if n.HasRole("broker") {
		fmt.Fprintf(&b, "advertised.listeners=%s\ninter.broker.listener.name=%s\n", strings.Join(advertised, ","), interBroker)
		if sec := c.Security(); sec != nil {
			b.WriteString(kafkaSecurityConfig(sec, n, ports, password))
		}
	}
	fmt.Fprintf(&b, "listener.security.protocol.map=%s\n", strings.Join(protocols, ","))
	fmt.Fprintf(&b, `controller.listener.names=CONTROLLER
log.dirs=%s
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=%[2]d
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=%[2]d
transaction.state.log.min.isr=%[3]d
share.coordinator.state.topic.replication.factor=%[2]d
share.coordinator.state.topic.min.isr=%[3]d
group.initial.rebalance.delay.ms=0
`, filepath.Join(n.Dir, "data"), rf, minISR)
	return b.String()
}

// kafkaSecurityConfig is a secured broker's TLS and SASL settings: its
// PEM key store, the cluster's authority as trust store, client
// certificates checked when presented on the ssl listener, and the user
// known to PLAIN (in this config) and to SCRAM (in the cluster's metadata,
// added when the storage is formatted).
func kafkaSecurityConfig(sec *local.Security, n *local.Node, ports map[string]string, password string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ssl.keystore.type=PEM\nssl.keystore.location=%s\nssl.truststore.type=PEM\nssl.truststore.location=%s\n", sec.NodeKeyStore(n), sec.CAFile)
	if _, ok := ports["ssl"]; ok {
		b.WriteString("listener.name.ssl.ssl.client.auth=requested\n")
	}
	b.WriteString("sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512\n")
	for _, l := range []string{"sasl_plaintext", "sasl_ssl"} {
		if _, ok := ports[l]; !ok {
			continue
		}
		fmt.Fprintf(&b, "listener.name.%s.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_%s=\"%s\";\n", l, local.Username, password)
		for _, mech := range []string{"scram-sha-256", "scram-sha-512"} {
			fmt.Fprintf(&b, "listener.name.%s.%s.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n", l, mech)
		}
	}
	return b.String()
}

const kafkaLog4j = "status = warn\nappender.console.type = Console\nappender.console.name = STDOUT\nappender.console.layout.type = PatternLayout\nappender.console.layout.pattern = [%d] %p %m (%c)%n\nrootLogger.level = info\nrootLogger.appenderRef.stdout.ref = STDOUT\n"

// java is the command line running class with the node's log config
// and a heap of heapMB.
func (k Kind) java(c *local.Cluster, n *local.Node, heapMB int, class string, args ...string) []string {
	base := []string{"java", fmt.Sprintf("-Xms%dm", heapMB), fmt.Sprintf("-Xmx%dm", heapMB),
		"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + n.ConfigFile("log4j2.properties")}
	if c.Linked() {
		// The JVM resolves the nodes' names from the node's own hosts
		// file: each peer through its own link.
		base = append(base, "-Djdk.net.hosts.file="+c.HostsFile(n))
	}
	base = append(base, "-cp", filepath.Join(LibDir(c.CacheDir, k.Version()), "*"), class)
	return append(base, args...)
}

// Command implements local.Kind: brokers get HeapMB, dedicated controllers 256 MB.
func (k Kind) Command(c *local.Cluster, n *local.Node) []string {
	heap := c.HeapMB
	if !n.HasRole("broker") {
		heap = 256
	}
	argv := k.java(c, n, heap, "kafka.Kafka", n.ConfigFile("server.properties"))
	if port, ok := n.Ports["metrics"]; ok {
		agent := fmt.Sprintf("-javaagent:%s=%s:%d:%s", k.jmxExporterJar(c.CacheDir), n.Host, port, n.ConfigFile("jmx-exporter.yaml"))
		argv = append(argv[:1:1], append([]string{agent, kafkaJMXFilter}, argv[1:]...)...)
	}
	return argv
}

// kafkaJMXRules is the JMX exporter's config: the broker metrics the
// reference studies read, named by Prometheus conventions. A read costs
// the broker CPU for every MBean and attribute the exporter walks, whether
// a rule keeps it or not: walking every request type's time histogram
// (and serving the JVM's series) made a read cost the broker 22 CPU-ms.
// Walking only the MBeans the rules read, and of the time histograms only
// the percentile read (each percentile sorts the histogram's samples), it
// costs about 4 (bench/metrics-cost). TestKafkaJMXConfigServesWhatIsRead
// keeps the MBeans, the attributes and the rules in step.
const kafkaJMXRules = `# Written by brokerbench: the broker metrics read during runs, and only
# the MBeans and attributes they come from.
lowercaseOutputName: true
includeObjectNames:
  - "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec"
  - "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"
  - "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec"
  - "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec"
  - "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec"
  - "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"
  - "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"
  - "kafka.server:type=ReplicaManager,name=OfflineReplicaCount"
  - "kafka.server:type=ReplicaManager,name=LeaderCount"
  - "kafka.server:type=ReplicaManager,name=PartitionCount"
  - "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,version=*"
  - "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=*"
  - "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchConsumer,version=*"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch"
  - "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=FetchConsumer"
  - "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs"
  - "kafka.controller:type=KafkaController,name=ActiveControllerCount"
  - "kafka.controller:type=KafkaController,name=OfflinePartitionsCount"
excludeObjectNameAttributes:
  "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce": [Count, Min, Max, Mean, StdDev, 50thPercentile, 75thPercentile, 95thPercentile, 98thPercentile, 999thPercentile]
  "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch": [Count, Min, Max, Mean, StdDev, 50thPercentile, 75thPercentile, 95thPercentile, 98thPercentile, 999thPercentile]
  "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=FetchConsumer": [Count, Min, Max, Mean, StdDev, 50thPercentile, 75thPercentile, 95thPercentile, 98thPercentile, 999thPercentile]
  "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs": [Min, Max, Mean, StdDev, 50thPercentile, 75thPercentile, 95thPercentile, 98thPercentile, 999thPercentile, MeanRate, OneMinuteRate, FiveMinuteRate, FifteenMinuteRate]
rules:
  - pattern: 'kafka.server<type=BrokerTopicMetrics, name=(MessagesIn|BytesIn|BytesOut)PerSec><>Count'
    name: kafka_server_$1_total
    type: COUNTER
  - pattern: 'kafka.server<type=ReplicaManager, name=(IsrShrinks|IsrExpands)PerSec><>Count'
    name: kafka_server_replicamanager_$1_total
    type: COUNTER
  - pattern: 'kafka.server<type=ReplicaManager, name=(UnderReplicatedPartitions|UnderMinIsrPartitionCount|OfflineReplicaCount|LeaderCount|PartitionCount)><>Value'
    name: kafka_server_replicamanager_$1
    type: GAUGE
  - pattern: 'kafka.network<type=RequestMetrics, name=RequestsPerSec, request=(Produce|FetchConsumer|Fetch), version=(\d+)><>Count'
    name: kafka_network_requests_total
    labels: {request: "$1"}
    type: COUNTER
  - pattern: 'kafka.network<type=RequestMetrics, name=TotalTimeMs, request=(Produce|FetchConsumer|Fetch)><>99thPercentile'
    name: kafka_network_request_total_time_ms_p99
    labels: {request: "$1"}
    type: GAUGE
  - pattern: 'kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs><>Count'
    name: kafka_log_flushes_total
    type: COUNTER
  - pattern: 'kafka.log<type=LogFlushStats, name=LogFlushRateAndTimeMs><>99thPercentile'
    name: kafka_log_flush_time_ms_p99
    type: GAUGE
  - pattern: 'kafka.controller<type=KafkaController, name=(ActiveControllerCount|OfflinePartitionsCount)><>Value'
    name: kafka_controller_$1
    type: GAUGE
`

// kafkaJMXFilter has the exporter serve only the broker's series: its
// JVM and process collectors (thread states, memory pools, deadlock
// detection), which brokerbench does not read (it samples the process
// from /proc), then do no work at a read.
const kafkaJMXFilter = "-Dio.prometheus.exporter.filter.metricNameMustStartWith=kafka_"

// Ready implements local.Kind: every broker is registered, and the consumer
// offsets topic (created on demand here) has every replica in sync. It
// asks on the listener the brokers talk to each other on, which needs no
// credentials, straight to the nodes (not through their links).
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	hosts := driver.Options{Hosts: map[string]string{}}
	key := kafkaListenerPorts(c)["plaintext"]
	if key == "" {
		key = "internal"
	}
	var seeds []string
	for _, n := range c.Nodes() {
		hosts.Hosts[c.AdvertisedHost(n)] = n.Host
		if port, ok := n.Ports[key]; ok {
			seeds = append(seeds, fmt.Sprintf("%s:%d", n.Host, port))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.Dialer(hosts.Dial))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	if len(md.Brokers) != c.Brokers {
		return fmt.Errorf("%d of %d brokers registered", len(md.Brokers), c.Brokers)
	}
	if c.Brokers == 1 {
		return nil
	}
	// Finding a group's coordinator makes the cluster create the offsets
	// topic, which the first run would otherwise wait for.
	if err := adm.FindGroupCoordinators(ctx, "brokerbench-ready").Error(); err != nil {
		return err
	}
	topics, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		return err
	}
	td, ok := topics["__consumer_offsets"]
	if !ok || td.Err != nil || len(td.Partitions) == 0 {
		return errors.New("the consumer offsets topic is not there yet")
	}
	for _, p := range td.Partitions {
		if len(p.ISR) < len(p.Replicas) || p.Leader < 0 {
			return fmt.Errorf("consumer offsets partition %d: %d of %d replicas in sync", p.Partition, len(p.ISR), len(p.Replicas))
		}
	}
	return nil
}

// noReload4j leaves out the log4j 1 binding Kafka 3.x releases depend
// on: with two bindings on the class path, SLF4J would pick one by the
// order of the files in the directory.
const noReload4j = `<exclusions><exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion><exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion></exclusions>`

// kafkaPOM is the POM whose runtime dependencies are Kafka release
// version's broker and tools, with log4j2 as the logging backend.
func kafkaPOM(version string) string {
	return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.brokerbench</groupId>
  <artifactId>kafka-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>` + version + `</version>` + noReload4j + `</dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>` + version + `</version>` + noReload4j + `</dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>` + log4jVersion + `</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>` + log4jVersion + `</version></dependency>
  </dependencies>
</project>
`
}
