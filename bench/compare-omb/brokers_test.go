package main

import (
	"strings"
	"testing"

	brokerreg "github.com/brokerbench/brokerbench/internal/brokers"
	_ "github.com/brokerbench/brokerbench/internal/brokers/all"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// OMB's driver files, as its sources have them at commit 85599891
// (licence headers left out, comments shortened).
const (
	// ombKafkaDriver is driver-kafka/kafka-throughput.yaml.
	ombKafkaDriver = `name: Kafka
driverClass: io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver

# Kafka client-specific configuration
replicationFactor: 3

topicConfig: |
  min.insync.replicas=2

commonConfig: |
  bootstrap.servers=localhost:9092
  default.api.timeout.ms=1200000
  request.timeout.ms=1200000

producerConfig: |
  acks=all
  linger.ms=1
  batch.size=1048576
`
	// ombRabbitMQDriver is driver-rabbitmq/rabbitmq.yaml.
	ombRabbitMQDriver = `name: RabbitMQ
driverClass: io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver

producerCreationDelay: 100
producerCreationBatchSize: 5
consumerCreationDelay: 100
consumerCreationBatchSize: 5

# RabbitMQ client specific configurations
amqpUris:
  - amqp://localhost
messagePersistence: false
queueType: QUORUM
`
	// ombNATSDriver is driver-nats/nats.yaml.
	ombNATSDriver = `name: NATS
driverClass: io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver

# NATS client-specific configuration
natsHostUrl: localhost:4222
replicationFactor: 3
`
	// ombRedisDriver is driver-redis/redis.yaml.
	ombRedisDriver = `name: Redis
driverClass: io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver

redisPort: 6379
redisHost: 127.0.0.1
jedisPoolMaxTotal: 8
jedisPoolMaxIdle: 8
`
	// ombPulsarDriver is driver-pulsar/pulsar.yaml.
	ombPulsarDriver = `name: Pulsar
driverClass: io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver

# Pulsar client-specific configuration
client:
  serviceUrl: pulsar://localhost:6650
  httpUrl: http://localhost:8080
  ioThreads: 16
  connectionsPerBroker: 8
  clusterName: local
  namespacePrefix: benchmark/ns
  topicType: persistent
  persistence:
    ensembleSize: 3
    writeQuorum: 3
    ackQuorum: 2
    deduplicationEnabled: false
  tlsAllowInsecureConnection: false
  tlsEnableHostnameVerification: false
  tlsTrustCertsFilePath:
  authentication:
    plugin:
    data:

# Producer configuration
producer:
  batchingEnabled: true
  batchingMaxPublishDelayMs: 1
  batchingMaxBytes: 131072
  blockIfQueueFull: true
  pendingQueueSize: 0

# Consumer configuration
consumer:
  receiverQueueSize: 10000
  subscriptionType: Failover
`
	// ombArtemisDriver is driver-artemis/artemis.yaml.
	ombArtemisDriver = `name: Artemis
driverClass: io.openmessaging.benchmark.driver.artemis.ArtemisBenchmarkDriver

# Artemis client-specific configuration
brokerAddress: tcp://localhost:61616
`
	// ombRocketMQDriver is driver-rocketmq5/rocketmq.yaml.
	ombRocketMQDriver = `name: RocketMQ5
driverClass: io.openmessaging.benchmark.driver.rocketmq.RocketMQ5BenchmarkDriver

# RocketMQ client-specific configuration
namesrvAddr: x.x.x.x:9876
clusterName: rocketmq-broker-xxxx
grpcEndpoint: 127.0.0.1:8081
sendDelayMsg: false
delayTimeInSec: 60

adminAccessKey: xxxx
adminSecretKey: xxxx
accessKey: xxxxxx
secretKey: xxxxx
`
)

// singleNode is a local single-node broker's status: its client port
// 29566, its HTTP port (Pulsar's admin API) 29567, its name server's
// port (RocketMQ's) 29568.
var singleNode = local.Status{Bootstrap: []string{"127.0.0.1:29566"},
	Nodes: []local.NodeStatus{{Node: local.Node{Host: "127.0.0.1", Ports: map[string]int{"client": 29566, "http": 29567}}},
		{Node: local.Node{Host: "127.0.0.1", Ports: map[string]int{"namesrv": 29568}}}}}

func TestPointAt(t *testing.T) {
	for _, tc := range []struct {
		broker string
		file   string
		// changes are the file's values the broker's pointAt replaces,
		// old, new, ...: the address, and what a single node requires.
		changes []string
		// without is a setting the file needs, its line as in the file.
		without string
	}{
		// bootstrap.servers; one replica, one in-sync replica.
		{"kafka", ombKafkaDriver, []string{"localhost:9092", "127.0.0.1:29566", "replicationFactor: 3", "replicationFactor: 1",
			"min.insync.replicas=2", "min.insync.replicas=1"}, "  bootstrap.servers=localhost:9092\n"},
		// The one AMQP URI; a quorum queue of one member runs on one node.
		{"rabbitmq", ombRabbitMQDriver, []string{"amqp://localhost", "amqp://127.0.0.1:29566"}, "amqpUris:\n  - amqp://localhost\n"},
		// The server's URL; streams of one replica.
		{"nats", ombNATSDriver, []string{"localhost:4222", "127.0.0.1:29566", "replicationFactor: 3", "replicationFactor: 1"}, "natsHostUrl: localhost:4222\n"},
		// Host and port.
		{"redis", ombRedisDriver, []string{"redisPort: 6379", "redisPort: 29566"}, "redisPort: 6379\n"},
		// Both URLs, the standalone node's cluster, one bookie.
		{"pulsar", ombPulsarDriver, []string{"pulsar://localhost:6650", "pulsar://127.0.0.1:29566", "http://localhost:8080", "http://127.0.0.1:29567",
			"clusterName: local", "clusterName: standalone", "ensembleSize: 3", "ensembleSize: 1", "writeQuorum: 3", "writeQuorum: 1",
			"ackQuorum: 2", "ackQuorum: 1"}, "  httpUrl: http://localhost:8080\n"},
		// The core protocol's URL.
		{"artemis", ombArtemisDriver, []string{"tcp://localhost:61616", "tcp://127.0.0.1:29566"}, "brokerAddress: tcp://localhost:61616\n"},
		// Name server, proxy, and the node's cluster.
		{"rocketmq", ombRocketMQDriver, []string{"x.x.x.x:9876", "127.0.0.1:29568", "127.0.0.1:8081", "127.0.0.1:29566",
			"rocketmq-broker-xxxx", "DefaultCluster"}, "grpcEndpoint: 127.0.0.1:8081\n"},
	} {
		t.Run(tc.broker, func(t *testing.T) {
			b := brokers[tc.broker]
			if !strings.HasSuffix(b.driverFile, ".yaml") || b.module == "" || b.counted == "" {
				t.Errorf("broker %q is incomplete: %+v", tc.broker, b)
			}
			got, err := b.pointAt(tc.file, singleNode)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.NewReplacer(tc.changes...).Replace(tc.file); got != want {
				t.Errorf("pointed driver file:\n%s\nwant:\n%s", got, want)
			}
			if _, err := b.pointAt(strings.Replace(tc.file, tc.without, "", 1), singleNode); err == nil {
				t.Errorf("a driver file without %q was pointed at the broker", tc.without)
			}
		})
	}
}

// TestBrokerbenchTakesThePointedFiles: brokerbench reads each broker's
// pointed OMB driver file as a config of that broker's own driver, and
// builds the driver from it (no broker needed until it connects).
func TestBrokerbenchTakesThePointedFiles(t *testing.T) {
	for name, file := range map[string]string{"kafka": ombKafkaDriver, "rabbitmq": ombRabbitMQDriver, "nats": ombNATSDriver,
		"redis": ombRedisDriver, "pulsar": ombPulsarDriver, "artemis": ombArtemisDriver, "rocketmq": ombRocketMQDriver} {
		t.Run(name, func(t *testing.T) {
			text, err := brokers[name].pointAt(file, singleNode)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := workload.ParseDriver(name+".yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Name != name || cfg.Format != workload.OMB {
				t.Fatalf("brokerbench reads OMB's %s driver file as %s (format %v)", name, cfg.Name, cfg.Format)
			}
			d, err := brokerreg.New(cfg, driver.Options{})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
		})
	}
}

func TestSumSeries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		counters map[string]float64
		want     int64
		wantErr  bool
	}{
		// RabbitMQ's global counter, one series per protocol: summed.
		{"series", map[string]float64{`rabbitmq_global_messages_received_total{protocol="amqp091"}`: 1200246,
			`rabbitmq_global_messages_received_total{protocol="stream"}`: 4, `rabbitmq_global_messages_received_confirm_total{protocol="amqp091"}`: 99}, 1200250, false},
		// A counter without labels.
		{"no labels", map[string]float64{"rabbitmq_global_messages_received_total": 1.5e6}, 1_500_000, false},
		// A longer name with the same prefix is another counter.
		{"absent", map[string]float64{"rabbitmq_global_messages_received_confirm_total": 5}, 0, true},
		// A negative count is no count.
		{"negative", map[string]float64{"rabbitmq_global_messages_received_total": -1}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sumSeries(tc.counters, "rabbitmq_global_messages_received_total")
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("sumSeries = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestTopicPath(t *testing.T) {
	for name, want := range map[string]string{
		// A partition of a run's topic.
		"persistent://benchmark/ns-AbCd/test-0000-XyZ-partition-3": "persistent/benchmark/ns-AbCd/test-0000-XyZ-partition-3",
		// Pulsar's own system topics are not the runs'.
		"persistent://benchmark/ns-AbCd/__change_events": "",
		// Non-persistent and malformed names.
		"non-persistent://benchmark/ns/t": "",
		"persistent://benchmark/t":        "",
	} {
		if got := topicPath(name); got != want {
			t.Errorf("topicPath(%q) = %q, want %q", name, got, want)
		}
	}
}

func FuzzPointAt(f *testing.F) {
	for _, file := range []string{ombKafkaDriver, ombRabbitMQDriver, ombNATSDriver, ombRedisDriver, ombPulsarDriver, ombArtemisDriver, ombRocketMQDriver} {
		f.Add(file)
	}
	f.Add("amqpUris:\n  -")
	f.Add("client:\n  serviceUrl:\n")
	f.Fuzz(func(t *testing.T, text string) {
		for name, b := range brokers {
			got, err := b.pointAt(text, singleNode)
			if err == nil && !strings.Contains(got, "29566") {
				t.Fatalf("%s: pointAt(%q) = %q, without the broker's port", name, text, got)
			}
		}
	})
}
