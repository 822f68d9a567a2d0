package rabbitmq

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// LocalKind is the kind of local cluster brokerbench starts for RabbitMQ,
// shared by its AMQP 0-9-1, AMQP 1.0 and Streams drivers.
var LocalKind = &brokers.Local{Kind: "rabbitmq", Port: 5672, New: NewLocal, MaxNodes: 9,
	NoLinks: "brokerbench does not carry a local RabbitMQ cluster's connections through the link proxy yet",
	Help: "RabbitMQ (rabbitmq) is Debian's rabbitmq-server (installed with apt-get when " +
		"brokerbench runs as root): one node on 127.0.0.1:5672, or --brokers N nodes on " +
		"127.0.1.i joined in one cluster, with the stream and AMQP 1.0 plugins; the three RabbitMQ " +
		"drivers (queues over AMQP 0-9-1 and AMQP 1.0, and streams) use it.",
}

// Metrics are a RabbitMQ node's: its Prometheus plugin's endpoint.
var Metrics = &brokers.Metrics{Endpoint: "Prometheus text at each node's metrics port (/metrics), served by the rabbitmq_prometheus plugin"}

func init() {
	brokers.Register(brokers.Module{
		Name: "rabbitmq", New: New, EndpointSettings: []string{"amqpUris"}, LocalListener: LocalListener,
		Capabilities: driver.Capabilities{Partitions: true, Replication: true},
		Local:        LocalKind,
		Metrics:      Metrics,
		OMBClasses:   []string{"io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver"},
		OMBTopLevel:  []string{"amqpUris", "messagePersistence", "queueType", "producerCreationDelay", "producerCreationBatchSize", "consumerCreationDelay", "consumerCreationBatchSize"},
		Docs:         "docs/drivers/rabbitmq.md",
	})
}
