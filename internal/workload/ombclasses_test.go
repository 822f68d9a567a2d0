package workload

// The brokers' modules register their OMB driver classes; the tests of
// this package, which links no broker, register the ones they read.
func init() {
	RegisterOMBDriverClass("io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver", "kafka")
	RegisterOMBDriverClass("io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver", "rabbitmq")
	RegisterOMBDriverClass("io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver", "pulsar")
}
