package stream

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/driver"
)

func init() {
	brokers.Register(brokers.Module{
		Name: "rabbitmq-stream", New: New, EndpointSettings: []string{"uris"}, LocalListener: localListener,
		Capabilities: driver.Capabilities{Partitions: true, Replication: true, Replay: true},
		Local:        rabbitmq.LocalKind,
		Metrics:      rabbitmq.Metrics,
		Docs:         "docs/drivers/rabbitmq-stream.md",
	})
}
