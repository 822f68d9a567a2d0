package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the RabbitMQ node the tests start, on a port of their own, when the
// first test that needs it asks.
var server = testbroker.NewLazyLocal("rabbitmq", 29672)

func TestMain(m *testing.M) { server.Main(m) }

func driverConfig(queueType string, extra ...workload.Property) *workload.DriverConfig {
	return &workload.DriverConfig{Name: "rabbitmq", Source: "test", ReplicationFactor: 1,
		Common: append(workload.Properties{{Key: "queueType", Value: queueType}}, extra...)}
}

func newDriver(t *testing.T, dc *workload.DriverConfig) driver.Driver {
	t.Helper()
	d, err := New(dc, driver.Options{Endpoints: []string{server.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConformance: the AMQP driver passes the driver contract's
// conformance suite against a real RabbitMQ, with classic and quorum
// queues, and with stream queues.
func TestConformance(t *testing.T) {
	for _, qt := range []string{"CLASSIC", "QUORUM", "STREAM"} {
		t.Run(qt, func(t *testing.T) {
			brokertest.Run(t, "rabbitmq", drivertest.Target{
				Connect: func(t *testing.T) driver.Driver { return newDriver(t, driverConfig(qt)) },
				Unreachable: func(*testing.T) (driver.Driver, error) {
					return New(driverConfig(qt), driver.Options{Endpoints: []string{"127.0.0.1:1"}})
				},
			})
		})
	}
}

// TestUnroutableFails: a message no queue takes (a topic without a
// subscription) is failed as UNROUTABLE, not counted as sent.
func TestUnroutableFails(t *testing.T) {
	d := newDriver(t, driverConfig("CLASSIC"))
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := "bb-unroutable-" + time.Now().Format("150405.000000")
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	defer d.DeleteTopic(ctx, topic)
	errs := make(chan error, 10)
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 10, MaxInFlight: 10}, func(_ *driver.Message, err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 10 {
		p.Send(ctx, &driver.Message{Value: []byte("x")})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := <-errs; driver.ErrorKind(err) != "UNROUTABLE" {
			t.Fatalf("a message without a queue: %v (kind %s); want UNROUTABLE", err, driver.ErrorKind(err))
		}
	}
}

// TestOMBDriverFile: OMB's RabbitMQ driver file (amqpUris as a list,
// queueType, creation delays) is accepted unchanged; a classic queue
// with replicas, and an unknown queue type, are input errors with their
// line; credentials never reach the effective config.
func TestOMBDriverFile(t *testing.T) {
	file := "name: RabbitMQ\ndriverClass: io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver\n" +
		"producerCreationDelay: 100\nproducerCreationBatchSize: 5\nconsumerCreationDelay: 100\nconsumerCreationBatchSize: 5\n" +
		"amqpUris:\n  - amqp://guest:guest@" + server.Get(t).Addr + "\nmessagePersistence: true\nqueueType: QUORUM\n"
	dc, err := workload.ParseDriver("rabbitmq.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(dc, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "RabbitMQ 3.") {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
	for _, p := range d.EffectiveConfig()["common"] {
		if strings.Contains(p.Value, "guest:guest") {
			t.Errorf("effective config shows the password: %s=%s", p.Key, p.Value)
		}
	}
	bad := "name: RabbitMQ\ndriverClass: io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver\namqpUris: [amqp://localhost]\nqueueType: QUORUMS\nreplicationFactor: 3\n"
	dc, err = workload.ParseDriver("bad.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(dc, driver.Options{}); err == nil || !strings.Contains(err.Error(), "bad.yaml:4") || !strings.Contains(err.Error(), "QUORUMS") {
		t.Errorf("an unknown queue type: %v", err)
	}
	if _, err := New(&workload.DriverConfig{Name: "rabbitmq", Source: "c.yaml", ReplicationFactor: 3}, driver.Options{}); err == nil || !strings.Contains(err.Error(), "classic queues keep one copy") {
		t.Errorf("classic queues with 3 replicas: %v", err)
	}
	var fe *workload.FieldError
	if _, err := New(driverConfig("CLASSIC", workload.Property{Key: "amqpUri", Value: "x", File: "d.yaml", Line: 7}), driver.Options{}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "d.yaml:7") {
		t.Errorf("a misspelled setting: %v", err)
	}
}

// TestOMBDriverFileRuns: OMB's driver-rabbitmq/rabbitmq.yaml, unchanged
// (quorum queues, its creation pacing), runs OMB's workload from OMB's
// layout against the test's RabbitMQ, taken as the running local node,
// whose address replaces the file's amqpUris.
func TestOMBDriverFileRuns(t *testing.T) {
	c := server.Get(t).Cluster
	omblayout.Run(t, "driver-rabbitmq/rabbitmq.yaml", omblayout.Target{LocalPort: c.Port, StateDir: c.StateDir})
}
