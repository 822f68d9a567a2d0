package pulsar

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// LocalKind is the kind of local cluster brokerbench starts for Pulsar:
// one standalone node (broker, bookie and metadata store in one JVM), or
// up to 5 brokers, each with its bookie, and a ZooKeeper node.
var LocalKind = &brokers.Local{Kind: "pulsar", Port: usualPort, New: NewLocal, MaxNodes: 5,
	NoLinks:   "the Pulsar client dials each broker at the address the topic lookups return, which brokerbench cannot yet point at a node's own links",
	Endpoints: localEndpoints,
	Help: "Pulsar (pulsar) is installed from Maven Central (needs Java 17+ and Maven). One broker " +
		"is a standalone node on 127.0.0.1:6650: broker, bookie and metadata store in one JVM, " +
		"its admin API on a port of its own. --brokers 2 to 5 start a cluster: broker i with its " +
		"bookie on 127.0.1.i, ZooKeeper on 127.0.2.1, ledgers on 3 bookies (2 of 2 for 2 brokers), acknowledged by 2. " +
		"--heap-mb sets each broker's heap. --security plain,tls adds the binary protocol and the admin API " +
		"over TLS and has every listener ask for a token (signed with a key of the cluster's password).",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "pulsar", New: New, EndpointSettings: []string{"serviceUrl", "httpUrl"}, LocalListener: localListener,
		// Replication is the namespace's persistence policy (ensemble,
		// write and ack quorums). The written count is the topics'
		// message-in counter; with deduplication on the driver gives
		// none (see New), and its conformance test says so.
		Capabilities: driver.Capabilities{Partitions: true, Replication: true, Replay: true, Written: true},
		Local:        LocalKind,
		Metrics:      &brokers.Metrics{Endpoint: "Prometheus text at each broker's web service port (/metrics), served by the broker itself"},
		OMBClasses:   []string{"io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver"},
		Docs:         "docs/drivers/pulsar.md",
	})
}

// localListener is the local cluster's listener a driver config connects
// to: "tls" when it asks for TLS.
func localListener(dc *workload.DriverConfig) string {
	if v, _ := dc.Common.Get("tls"); v == "true" {
		return "tls"
	}
	return "plain"
}
