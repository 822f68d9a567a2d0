package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/brokerbench/brokerbench/internal/local"
)

// broker is one broker both OMB and brokerbench drive.
type broker struct {
	name       string // as -brokers names it: brokerbench's local kind
	module     string // OMB's driver module
	driverFile string // OMB's driver file, relative to the checkout
	// local is the single-node broker the comparison starts.
	local func(port int) *local.Cluster
	// pointAt returns OMB's driver file pointed at the broker st
	// describes, changed only where a single local node requires it.
	pointAt func(text string, st local.Status) (string, error)
	// counted says what count reads, for the report.
	counted string
	// count reads the broker's count of the messages the runs published:
	// the messages it holds, or a counter of those it took that only
	// grows. A run's figure is the count after it less the count before.
	// nil: the broker cannot count them, and a run's figure is the tool's
	// own count (counted says so).
	count func(ctx context.Context, st local.Status) (int64, error)
	// clean deletes what the runs left on the broker st describes.
	clean func(ctx context.Context, st local.Status) error
	// workloads, when set, are the broker's default workloads, relative
	// to the repository's root, in place of defaultWorkloads.
	workloads []string
}

// brokers are the brokers the comparison supports, by name, in the order
// -brokers lists them in its help.
var brokers = map[string]broker{
	"kafka": {name: "kafka", module: "driver-kafka", driverFile: "driver-kafka/kafka-throughput.yaml",
		local: newKafka, pointAt: pointKafkaDriver, counted: kafkaCounted, count: storedKafka, clean: cleanKafka},
	"rabbitmq": {name: "rabbitmq", module: "driver-rabbitmq", driverFile: "driver-rabbitmq/rabbitmq.yaml",
		local: newRabbitMQ, pointAt: pointRabbitMQDriver, counted: rabbitMQCounted, count: receivedRabbitMQ, clean: cleanRabbitMQ,
		workloads: singlePartitionWorkloads},
	"nats": {name: "nats", module: "driver-nats", driverFile: "driver-nats/nats.yaml",
		local: newNATS, pointAt: pointNATSDriver, counted: natsCounted, count: storedNATS, clean: cleanNATS},
	"redis": {name: "redis", module: "driver-redis", driverFile: "driver-redis/redis.yaml",
		local: newRedis, pointAt: pointRedisDriver, counted: redisCounted, count: addedRedis, clean: cleanRedis},
	"pulsar": {name: "pulsar", module: "driver-pulsar", driverFile: "driver-pulsar/pulsar.yaml",
		local: newPulsar, pointAt: pointPulsarDriver, counted: pulsarCounted, count: publishedPulsar, clean: cleanPulsar},
	"artemis": {name: "artemis", module: "driver-artemis", driverFile: "driver-artemis/artemis.yaml",
		local: newArtemis, pointAt: pointArtemisDriver, counted: artemisCounted, clean: cleanArtemis},
	"rocketmq": {name: "rocketmq", module: "driver-rocketmq5", driverFile: "driver-rocketmq5/rocketmq.yaml",
		local: newRocketMQ, pointAt: pointRocketMQDriver, counted: rocketMQCounted, count: receivedRocketMQ, clean: cleanRocketMQ},
}

// brokerNames lists the supported brokers for help and errors.
const brokerNames = "kafka, rabbitmq, nats, redis, pulsar, artemis, rocketmq"

// setting matches a line "key: value" of OMB's YAML driver files at any
// indentation; group 1 is everything up to the value.
func setting(key string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^([ \t]*` + regexp.QuoteMeta(key) + `:[ \t]*)[^\n]*$`)
}

// setRequired sets the value of every line of key to value, or says that
// OMB's driver file of product sets no key.
func setRequired(text, product, key, value string) (string, error) {
	re := setting(key)
	if !re.MatchString(text) {
		return "", fmt.Errorf("OMB's %s driver file sets no %s", product, key)
	}
	return setAll(text, re, value), nil
}

// setAll sets the value of every line re (a setting) matches.
func setAll(text string, re *regexp.Regexp, value string) string {
	return re.ReplaceAllStringFunc(text, func(line string) string {
		return re.FindStringSubmatch(line)[1] + value
	})
}
