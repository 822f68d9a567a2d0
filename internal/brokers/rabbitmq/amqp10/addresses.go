package amqp10

import (
	"net/url"
)

// addressFormat is how a RabbitMQ release writes the AMQP 1.0 addresses
// of exchanges and queues.
type addressFormat string

const (
	// formatV1 is RabbitMQ 3's (the rabbitmq_amqp1_0 plugin; deprecated in
	// RabbitMQ 4): a target /exchange/X/RK publishes to exchange X with
	// routing key RK; a source /amq/queue/Q consumes from queue Q, which
	// must exist (/queue/Q would declare it, with arguments of its own).
	formatV1 addressFormat = "v1"
	// formatV2 is RabbitMQ 4's: /exchanges/X/RK and /queues/Q, each part
	// percent-encoded.
	formatV2 addressFormat = "v2"
)

// exchange is the target address that publishes to exchange with
// routing key key.
func (f addressFormat) exchange(exchange, key string) string {
	if f == formatV2 {
		return "/exchanges/" + url.PathEscape(exchange) + "/" + url.PathEscape(key)
	}
	return "/exchange/" + exchange + "/" + key
}

// queue is the source address that consumes from queue.
func (f addressFormat) queue(queue string) string {
	if f == formatV2 {
		return "/queues/" + url.PathEscape(queue)
	}
	return "/amq/queue/" + queue
}
