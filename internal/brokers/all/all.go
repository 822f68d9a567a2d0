// Package all links every broker brokerbench knows into the program that
// imports it: one import per broker, each registering its module (see
// package brokers).
package all

import (
	_ "github.com/brokerbench/brokerbench/internal/brokers/artemis"
	_ "github.com/brokerbench/brokerbench/internal/brokers/kafka"
	_ "github.com/brokerbench/brokerbench/internal/brokers/memory"
	_ "github.com/brokerbench/brokerbench/internal/brokers/mqtt"
	_ "github.com/brokerbench/brokerbench/internal/brokers/nats"
	_ "github.com/brokerbench/brokerbench/internal/brokers/nsq"
	_ "github.com/brokerbench/brokerbench/internal/brokers/pulsar"
	_ "github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	_ "github.com/brokerbench/brokerbench/internal/brokers/rabbitmq/amqp10"
	_ "github.com/brokerbench/brokerbench/internal/brokers/rabbitmq/stream"
	_ "github.com/brokerbench/brokerbench/internal/brokers/redis"
	_ "github.com/brokerbench/brokerbench/internal/brokers/rocketmq"
)
