// Package artemis is brokerbench's ActiveMQ Artemis: its driver, over
// AMQP 1.0 on the client side the AMQP 1.0 drivers share (package
// amqp10, on go-amqp); the local broker brokerbench starts (Kind); and
// the module that registers them (module.go).
//
// A topic is an Artemis address with multicast routing, without
// partitions; a subscription is a durable multicast queue on it, named
// TOPIC-SUBSCRIPTION as OMB's driver names it, which every consumer of
// the subscription shares. The driver creates and deletes both through
// Artemis' management address and reads the address's routed-message
// count there (the written count). Producers send durable messages on a
// link of their own connection, unsettled, and a message is acknowledged
// once the broker accepted it: stored, for a durable message. Consumers
// receive on a link to the queue's fully qualified name (TOPIC::QUEUE)
// with the configured credit, and accept each message after the runner
// consumed it (at least once). A queue keeps each producer's messages in
// order for a consumer: deliveries are lane 0. A re-read browses the
// queue.
//
// Without a management address (managementAddress empty) the driver
// speaks plain AMQP 1.0 to any broker: producers send to the topic's
// name, consumers receive from TOPIC::QUEUE, and the broker creates
// what it is asked for as it does.
package artemis

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/amqp10"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Driver talks to one Artemis broker. It is safe for concurrent use.
type Driver struct {
	cfg  *config
	opts driver.Options

	mu    sync.Mutex
	admin *amqp.Conn  // the connection of management requests, made on first use
	mgmt  *management // nil until first used, or without a management address
}

var _ driver.WrittenCounter = (*Driver)(nil)

// New validates dc; connections are made on first use. Without a
// management address the driver neither counts written messages nor
// reads the broker again.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, opts: opts}
	if cfg.management == "" {
		return uncounted{d}, nil
	}
	return d, nil
}

// uncounted is a driver without its driver.WrittenCounter and
// driver.Rereader, which need the management address.
type uncounted struct{ driver.Driver }

// broker is where the driver connects and how it logs in.
func (d *Driver) broker() *amqp10.Broker {
	return &amqp10.Broker{Addr: d.cfg.addr, TLS: d.cfg.tls, Username: d.cfg.username, Password: d.cfg.password, Dial: d.opts.Dial}
}

// NewProducer implements driver.Driver: a sender link to the topic's
// address on a connection of its own, whose messages the broker settles
// once it accepted them. The "topic" capability has a broker that
// creates addresses on demand make a multicast one.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	return amqp10.NewProducer(ctx, d.broker(), amqp10.Link{Address: spec.Topic, Capabilities: []string{"topic"}}, d.cfg.durable, spec.MaxInFlight, ack)
}

// NewConsumer implements driver.Driver: a receiver link, on a connection
// of its own, to the subscription's queue, which its first consumer
// creates. A queue receives the messages routed to the address after it
// exists (Artemis cannot replay), and the runner subscribes before it
// produces: StartEarliest and StartNew are the same here.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := checkName("subscription", spec.Subscription); err != nil {
		return nil, err
	}
	if err := d.createQueue(ctx, spec.Topic, spec.Subscription); err != nil {
		return nil, err
	}
	// The queue's fully qualified name; the "topic" capability has a
	// broker that creates queues on demand make a multicast one.
	source := spec.Topic + "::" + queueName(spec.Topic, spec.Subscription)
	return amqp10.NewConsumer(ctx, d.broker(), amqp10.Link{Address: source, Capabilities: []string{"topic"}}, d.cfg.credit, consume)
}

// adminConn returns the connection of management requests, and their
// link when the driver has a management address.
func (d *Driver) adminConn(ctx context.Context) (*amqp.Conn, *management, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.admin == nil {
		conn, err := d.broker().Connect(ctx)
		if err != nil {
			return nil, nil, err
		}
		d.admin = conn
	}
	if d.mgmt == nil && d.cfg.management != "" {
		m, err := newManagement(ctx, d.admin, d.cfg.management)
		if err != nil {
			return nil, nil, err
		}
		d.mgmt = m
	}
	return d.admin, d.mgmt, nil
}

// BrokerVersion implements driver.Driver: the product and version the
// broker announces when a connection opens.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	conn, _, err := d.adminConn(ctx)
	if err != nil {
		return "", err
	}
	props := conn.Properties()
	product, _ := props["product"].(string)
	version, _ := props["version"].(string)
	switch {
	case product == "apache-activemq-artemis":
		return "ActiveMQ Artemis " + version, nil
	case product == "" && version == "":
		return "an AMQP 1.0 broker that does not say which", nil
	default:
		return product + " " + version, nil
	}
}

// validName is what the driver accepts as a topic or subscription name:
// Artemis takes more, but '.', '*', '#' and ':' have meanings in its
// addresses (wildcards, the queue separator '::').
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

func checkName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("Artemis %s name %q: the driver takes 1 to 200 letters, digits, '_' and '-'", what, name)
	}
	return nil
}

// CreateTopic implements driver.Driver: a multicast address. A topic
// has one lane; spec.Config must be empty (an address takes its
// settings from the broker's address settings).
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := checkName("topic", spec.Name); err != nil {
		return err
	}
	if len(spec.Config) > 0 {
		return fmt.Errorf("create topic %q: the Artemis driver takes no topic settings (got %s): set them in the broker's address-settings", spec.Name, spec.Config[0].Key)
	}
	_, m, err := d.adminConn(ctx)
	if err != nil || m == nil {
		return err
	}
	if err := m.invoke(ctx, "broker", "createAddress", nil, spec.Name, "MULTICAST"); err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver: the address with its queues and
// what they hold, also while clients are attached to it.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	_, m, err := d.adminConn(ctx)
	if err != nil || m == nil {
		return err
	}
	err = m.invoke(ctx, "broker", "deleteAddress", nil, name, true)
	if errors.Is(err, errManagement) && notFound.MatchString(err.Error()) {
		return fmt.Errorf("delete topic %q: %w: %w", name, driver.ErrTopicNotFound, err)
	}
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// notFound matches Artemis' message for an address it does not have.
var notFound = regexp.MustCompile(`AMQ229203|(?i)does not exist`)

// queueName is the queue of a subscription of topic, named as OMB's
// driver names it.
func queueName(topic, subscription string) string { return topic + "-" + subscription }

// createQueue creates the durable multicast queue of a subscription,
// unless it exists.
func (d *Driver) createQueue(ctx context.Context, topic, subscription string) error {
	_, m, err := d.adminConn(ctx)
	if err != nil || m == nil {
		return err
	}
	q := fmt.Sprintf(`{"name":%q,"address":%q,"routing-type":"MULTICAST","durable":true}`, queueName(topic, subscription), topic)
	if err := m.invoke(ctx, "broker", "createQueue", nil, q, true); err != nil {
		return fmt.Errorf("create queue %q of topic %q: %w", queueName(topic, subscription), topic, err)
	}
	return nil
}

// Written implements driver.WrittenCounter: the address's count of the
// messages routed to one of its queues or more, which consumption does
// not lower. Artemis keeps it in memory: a restarted broker counts from
// zero.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	_, m, err := d.adminConn(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := m.attribute(ctx, "address."+topic, "routedMessageCount", &n); err != nil {
		return 0, fmt.Errorf("read the routed messages of topic %q: %w", topic, err)
	}
	return n, nil
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.admin != nil {
		_ = d.admin.Close()
		d.admin, d.mgmt = nil, nil
	}
}
