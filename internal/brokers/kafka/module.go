package kafka

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// LocalKind is the kind of local cluster brokerbench starts for Kafka.
var LocalKind = &brokers.Local{Kind: "kafka", Port: 9092, New: NewLocal, MaxNodes: 9,
	Help: "Kafka (kafka) is installed from Maven Central (needs Java 17+ and Maven) into " +
		"the brokerbench cache ($BROKERBENCH_CACHE, default ~/.cache/brokerbench) and " +
		"runs in KRaft mode: one node on 127.0.0.1, or --brokers N, each broker on its " +
		"own loopback address (127.0.1.i), with the first three brokers as the controller" +
		" quorum or --controllers dedicated ones. Internal topics are replicated min(3, " +
		"N) times. A cluster's nodes share the machine's cores and disk: on 2 cores and " +
		"24 GiB, 9 brokers of 512 MiB start in 35 s and take 3 GiB resident when idle; 3 " +
		"is what the reference studies use. --controllers applies to Kafka only.",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "kafka", New: New, EndpointSettings: []string{"bootstrap.servers"}, LocalListener: localListener,
		Capabilities: driver.Capabilities{Partitions: true, Replication: true, Replay: true,
			AcksLevels: []string{"0", "1", "all", "-1"}, Written: true, Transactions: true},
		Local:   LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "Prometheus text at each node's metrics port (/metrics), served by the Prometheus JMX exporter agent the nodes run with"},
		OMBClasses: []string{
			"io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver",
			"io.openmessaging.benchmark.driver.redpanda.RedpandaBenchmarkDriver",
		},
		Docs: "docs/drivers/kafka.md",
	})
}
