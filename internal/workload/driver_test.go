package workload

import (
	"strings"
	"testing"
)

// TestDriverSecrets: references to secrets expand in every kind of
// setting (a properties block, a mapping, OMB's top-level settings), and
// an unset variable is an error at the setting's file and line.
func TestDriverSecrets(t *testing.T) {
	t.Setenv("BB_DRIVER_TEST_PW", "hunter2-long")
	// As the RabbitMQ module declares its OMB class (this package links
	// no broker).
	RegisterOMBDriverClass("io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver", "rabbitmq", "amqpUris")
	dc, err := ParseDriver("d.yaml", []byte("name: RabbitMQ\ndriverClass: io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver\n"+
		"amqpUris:\n  - amqp://u:${env:BB_DRIVER_TEST_PW}@h:5672\nproducerConfig: |\n  a=${env:BB_DRIVER_TEST_PW}\nconsumerConfig: {b: \"x${env:BB_DRIVER_TEST_PW}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		props Properties
		key   string
		want  string
	}{{dc.Common, "amqpUris", "amqp://u:hunter2-long@h:5672"}, {dc.Producer, "a", "hunter2-long"}, {dc.Consumer, "b", "xhunter2-long"}} {
		if v, _ := c.props.Get(c.key); v != c.want {
			t.Errorf("%s = %q, want %q", c.key, v, c.want)
		}
	}
	_, err = ParseDriver("e.yaml", []byte("driver: kafka\ncommonConfig:\n  client.id: ${env:BB_DRIVER_TEST_UNSET}\n"))
	if err == nil || !strings.Contains(err.Error(), "e.yaml:3") || !strings.Contains(err.Error(), "BB_DRIVER_TEST_UNSET") {
		t.Errorf("an unset variable: %v", err)
	}
}

// TestOMBSections: the client, producer and consumer sections OMB's
// driver files for other brokers than Kafka carry at their top level are
// read as commonConfig, producerConfig and consumerConfig, each setting
// at its line; a setting without a value stays unset, and a nested
// section's keys are joined with dots (Pulsar's persistence.ensembleSize).
func TestOMBSections(t *testing.T) {
	c, err := ParseDriver("d.yaml", []byte("name: X\ndriver: x\nclient:\n  serverUri: tcp://h:1\n  username:\nproducer:\n  qos: 1\nconsumer:\n  receiveMaximum: 9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := c.Common.Get("serverUri"); u != "tcp://h:1" || c.Common[0].Line != 4 || len(c.Common) != 1 {
		t.Errorf("commonConfig %+v", c.Common)
	}
	if q, _ := c.Producer.Get("qos"); q != "1" {
		t.Errorf("producerConfig %+v", c.Producer)
	}
	if r, _ := c.Consumer.Get("receiveMaximum"); r != "9" {
		t.Errorf("consumerConfig %+v", c.Consumer)
	}
	n, err := ParseDriver("d.yaml", []byte("driver: x\nclient:\n  persistence:\n    ensembleSize: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := n.Common.Get("persistence.ensembleSize"); v != "3" {
		t.Errorf("a nested section: %+v, %v", n.Common, err)
	}
}
