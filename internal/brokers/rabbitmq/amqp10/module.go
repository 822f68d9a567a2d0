package amqp10

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/driver"
)

func init() {
	brokers.Register(brokers.Module{
		Name: "rabbitmq-amqp10", New: New, EndpointSettings: []string{"amqpUris"}, LocalListener: rabbitmq.LocalListener,
		// A topic is sent on one link with one routing key, to one queue
		// per subscription (no partitions); a quorum queue keeps
		// replicas; a queue holds only what was routed to it after it
		// was made (no replay) and shrinks as it is consumed (no written
		// count).
		Capabilities: driver.Capabilities{Replication: true},
		Local:        rabbitmq.LocalKind,
		Metrics:      rabbitmq.Metrics,
		Docs:         "docs/drivers/rabbitmq-amqp10.md",
	})
}
