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
	"sync/atomic"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/amqp10"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Driver talks to one Artemis broker, or to the nodes of a cluster:
// producers and consumers connect to the nodes in turn, and addresses
// and queues are made on every node. It is safe for concurrent use.
type Driver struct {
	cfg   *config
	nodes []*node // one per acceptor address of cfg
	// brokers are the nodes' brokers, for the clients' connections.
	brokers []*amqp10.Broker
	// next is the node the next client connects to first.
	next atomic.Uint64
}

// node is one broker the driver reaches, and its connection of
// management requests, made on first use.
type node struct {
	broker *amqp10.Broker
	mu     sync.Mutex
	admin  *amqp.Conn
	mgmt   *management // nil without a management address
}

var (
	_ driver.WrittenCounter          = (*Driver)(nil)
	_ driver.ResettingWrittenCounter = (*Driver)(nil)
	_ driver.Rereader                = cluster{}
	_ driver.Unplaced                = cluster{}
)

// New validates dc; connections are made on first use. Without a
// management address the driver neither counts written messages nor
// reads the broker again; with several nodes, it does not count written
// messages (see cluster).
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	d, err := newDriver(dc, opts)
	switch {
	case err != nil:
		return nil, err
	case d.cfg.management == "":
		return uncounted{d}, nil
	case len(d.nodes) > 1:
		return cluster{Driver: d, Rereader: d}, nil
	}
	return d, nil
}

// newDriver is New's driver, whatever it offers.
func newDriver(dc *workload.DriverConfig, opts driver.Options) (*Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg}
	for _, addr := range cfg.addrs {
		b := &amqp10.Broker{Addr: addr, TLS: cfg.tls, Username: cfg.username, Password: cfg.password, Dial: opts.Dial}
		d.nodes = append(d.nodes, &node{broker: b})
		d.brokers = append(d.brokers, b)
	}
	return d, nil
}

// uncounted is a driver without its driver.WrittenCounter and
// driver.Rereader, which need the management address.
type uncounted struct{ driver.Driver }

// cluster is the driver of a cluster's nodes, without its
// driver.WrittenCounter: a node counts a message routed on its address
// when a producer sends it there and again when another node forwards
// it there, so that the nodes' counts add up to more than was written.
type cluster struct {
	driver.Driver
	driver.Rereader
}

// Unplaced implements driver.Unplaced.
func (cluster) Unplaced() string {
	return "an Artemis cluster has no node that leads a topic: every node holds its own part of each subscription's queue, " +
		"and forwards messages to the others' parts that have consumers; aim the fault at a node by number, or at random"
}

// turn is the index of the node the next producer or consumer connects
// to first, so that clients spread over a cluster's nodes; it connects
// to the first after it that answers (see amqp10.ConnectFrom).
func (d *Driver) turn() uint64 { return d.next.Add(1) - 1 }

// NewProducer implements driver.Driver: a sender link to the topic's
// address on a connection of its own, to the next node in turn, whose
// messages the broker settles once it accepted them; once its
// connection is lost, the producer connects to the next node that
// answers. The "topic" capability has a broker that creates addresses on
// demand make a multicast one.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	return amqp10.NewProducer(ctx, d.brokers, d.turn(), amqp10.Link{Address: spec.Topic, Capabilities: []string{"topic"}}, d.cfg.durable, spec.MaxInFlight, ack)
}

// NewConsumer implements driver.Driver: a receiver link, on a connection
// of its own to the next node in turn, to the subscription's queue, which its first consumer
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
	return amqp10.NewConsumer(ctx, d.brokers, d.turn(), amqp10.Link{Address: source, Capabilities: []string{"topic"}}, amqp10.Credit{Window: d.cfg.credit}, consume)
}

// manage returns the connection of management requests to node n, and
// their link when the driver has a management address: a new one when
// the last was lost (its node was killed, or restarted).
func (d *Driver) manage(ctx context.Context, n *node) (*amqp.Conn, *management, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.admin != nil && amqp10.Lost(n.admin) {
		_ = n.admin.Close()
		n.admin, n.mgmt = nil, nil
	}
	if n.admin == nil {
		conn, err := n.broker.Connect(ctx)
		if err != nil {
			return nil, nil, err
		}
		n.admin = conn
	}
	if n.mgmt == nil && d.cfg.management != "" {
		m, err := newManagement(ctx, n.admin, d.cfg.management)
		if err != nil {
			return nil, nil, err
		}
		n.mgmt = m
	}
	return n.admin, n.mgmt, nil
}

// onEvery runs f with the management link of every node, one after
// another, and returns their errors, each naming its node in a cluster.
// Without a management address it does nothing.
func (d *Driver) onEvery(ctx context.Context, f func(m *management) error) error {
	if d.cfg.management == "" {
		return nil
	}
	var errs []error
	for _, n := range d.nodes {
		_, m, err := d.manage(ctx, n)
		if err == nil {
			err = f(m)
		}
		if err != nil && len(d.nodes) > 1 {
			err = fmt.Errorf("node %s: %w", n.broker.Addr, err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// BrokerVersion implements driver.Driver: the product and version the
// broker announces when a connection opens.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	conn, _, err := d.manage(ctx, d.nodes[0])
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

// CreateTopic implements driver.Driver: a multicast address, on every
// node of a cluster. A topic has one lane; spec.Config must be empty (an
// address takes its settings from the broker's address settings).
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := checkName("topic", spec.Name); err != nil {
		return err
	}
	if len(spec.Config) > 0 {
		return fmt.Errorf("create topic %q: the Artemis driver takes no topic settings (got %s): set them in the broker's address-settings", spec.Name, spec.Config[0].Key)
	}
	if err := d.onEvery(ctx, func(m *management) error {
		return m.invoke(ctx, "broker", "createAddress", nil, spec.Name, "MULTICAST")
	}); err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver: the address with its queues and
// what they hold, also while clients are attached to it, on every node
// of a cluster that has it. A topic no node has is ErrTopicNotFound.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	missing := 0
	err := d.onEvery(ctx, func(m *management) error {
		err := m.invoke(ctx, "broker", "deleteAddress", nil, name, true)
		if errors.Is(err, errManagement) && notFound.MatchString(err.Error()) {
			missing++
			return nil
		}
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("delete topic %q: %w", name, err)
	case missing == len(d.nodes):
		return fmt.Errorf("delete topic %q: %w: no node has the address", name, driver.ErrTopicNotFound)
	}
	return nil
}

// notFound matches Artemis' message for an address it does not have.
var notFound = regexp.MustCompile(`AMQ229203|(?i)does not exist`)

// queueName is the queue of a subscription of topic, named as OMB's
// driver names it.
func queueName(topic, subscription string) string { return topic + "-" + subscription }

// createQueue creates the durable multicast queue of a subscription on
// every node, unless it exists there: a cluster's nodes route each
// message to one of the queues of that name, so that a node without
// consumers of its own has somewhere to put a message before it learns
// of the others' consumers.
func (d *Driver) createQueue(ctx context.Context, topic, subscription string) error {
	q := fmt.Sprintf(`{"name":%q,"address":%q,"routing-type":"MULTICAST","durable":true}`, queueName(topic, subscription), topic)
	if err := d.onEvery(ctx, func(m *management) error { return m.invoke(ctx, "broker", "createQueue", nil, q, true) }); err != nil {
		return fmt.Errorf("create queue %q of topic %q: %w", queueName(topic, subscription), topic, err)
	}
	return nil
}

// Written implements driver.WrittenCounter: the address's count of the
// messages routed to one of its queues or more, which consumption does
// not lower. A cluster's driver does not offer it (see cluster).
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	_, m, err := d.manage(ctx, d.nodes[0])
	if err != nil {
		return 0, err
	}
	var n int64
	if err := m.attribute(ctx, "address."+topic, "routedMessageCount", &n); err != nil {
		return 0, fmt.Errorf("read the routed messages of topic %q: %w", topic, err)
	}
	return n, nil
}

// WrittenResets implements driver.ResettingWrittenCounter: Artemis keeps
// the count in memory, and a restarted broker counts from zero.
func (d *Driver) WrittenResets() bool { return true }

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {
	for _, n := range d.nodes {
		n.mu.Lock()
		if n.admin != nil {
			_ = n.admin.Close()
			n.admin, n.mgmt = nil, nil
		}
		n.mu.Unlock()
	}
}
