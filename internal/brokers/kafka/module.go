package kafka

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// LocalKind is the kind of local cluster brokerbench starts for Kafka.
var LocalKind = &brokers.Local{Kind: "kafka", Port: 9092, New: NewLocal, MaxNodes: 9}

func init() {
	brokers.Register(brokers.Module{
		Name: "kafka", New: New, EndpointSetting: "bootstrap.servers", LocalListener: localListener,
		Capabilities: driver.Capabilities{Partitions: true, Replication: true, Replay: true,
			AcksLevels: []string{"0", "1", "all", "-1"}, Written: true},
		Local:   LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "Prometheus text at each node's metrics port (/metrics), served by the Prometheus JMX exporter agent the nodes run with"},
		OMBClasses: []string{
			"io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver",
			"io.openmessaging.benchmark.driver.redpanda.RedpandaBenchmarkDriver",
		},
		Docs: "docs/drivers/kafka.md",
	})
}
