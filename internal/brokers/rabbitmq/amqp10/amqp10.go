// Package amqp10 is brokerbench's driver of RabbitMQ over AMQP 1.0 (the
// rabbitmq_amqp1_0 plugin of RabbitMQ 3, the protocol RabbitMQ 4 speaks
// natively), on the AMQP 1.0 client side brokerbench's drivers share
// (package internal/amqp10), and the module that registers it
// (module.go). It runs on the local clusters of package rabbitmq, whose
// nodes serve AMQP 1.0 on their AMQP listeners.
//
// Topics and subscriptions are the AMQP 0-9-1 driver's (package
// rabbitmq), made through it over AMQP 0-9-1, since AMQP 1.0 cannot
// declare them with a queue type: a topic is a durable direct exchange
// with a record of its subscriptions, and a subscription is a classic or
// quorum queue, SUBSCRIPTION.0, bound to it with the routing key "0".
// Messages travel over AMQP 1.0: a producer sends on a sender link whose
// target is the exchange with that routing key, unsettled, and a message
// is acknowledged once the broker accepted it (RabbitMQ accepts it when
// its queues confirmed it); a consumer receives on a receiver link from
// the queue with the configured credit, and accepts each message after
// the runner consumed it (on RabbitMQ 3, credit is granted again once
// spent: see NewConsumer). How the addresses are written depends on the
// broker's release (addressFormat: v1 for RabbitMQ 3, v2 for 4), see
// addresses.go. A re-read is the AMQP 0-9-1 driver's.
package amqp10

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"

	client "github.com/brokerbench/brokerbench/internal/amqp10"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Driver sends and receives over AMQP 1.0 and makes its topics through
// an AMQP 0-9-1 driver. It is safe for concurrent use.
type Driver struct {
	cfg      *config
	topology *rabbitmq.Driver
	nodes    []*client.Broker
	next     atomic.Uint64 // the next client's node, in turn
}

var (
	_ driver.Driver   = (*Driver)(nil)
	_ driver.Rereader = (*Driver)(nil)
)

// New validates dc; connections are made on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	own, rest := split(dc)
	cfg, ownErr := parseConfig(own)
	td, err := rabbitmq.New(rest, opts)
	if err := errors.Join(ownErr, err); err != nil {
		return nil, err
	}
	topology := td.(*rabbitmq.Driver)
	if qt := topology.QueueType(); qt == "stream" {
		return nil, fmt.Errorf("%s: queueType STREAM: a stream is read from an offset, which RabbitMQ 3's AMQP 1.0 plugin cannot ask for: use CLASSIC or QUORUM, or the rabbitmq-stream driver", dc.Source)
	}
	d := &Driver{cfg: cfg, topology: topology}
	for _, n := range topology.Nodes() {
		d.nodes = append(d.nodes, &client.Broker{Addr: n.Addr, TLS: n.TLS, Username: n.Username, Password: n.Password,
			External: n.External, HostName: "vhost:" + n.Vhost, Dial: opts.Dial})
	}
	cfg.effective["common"] = slices.Concat(topology.EffectiveConfig()["common"], cfg.effective["common"]).Effective()
	return d, nil
}

// node returns the node the next producer or consumer connects to, each
// in turn, as the one node of its client: a client stays on its node,
// and connects to it again once its connection is lost.
func (d *Driver) node() []*client.Broker {
	i := int(d.next.Add(1)-1) % len(d.nodes)
	return d.nodes[i : i+1]
}

// validName is what the driver takes as a topic or subscription name:
// RabbitMQ takes more, but '/' separates the parts of an address and
// the queue's name adds ".0".
var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,200}$`)

func checkName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("RabbitMQ AMQP 1.0 %s name %q: the driver takes 1 to 200 letters, digits, '_', '.' and '-'", what, name)
	}
	return nil
}

// BrokerVersion implements driver.Driver: the AMQP 0-9-1 driver's.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	return d.topology.BrokerVersion(ctx)
}

// CreateTopic implements driver.Driver: the topic's exchange and record,
// as the AMQP 0-9-1 driver makes them. A topic has one lane.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := checkName("topic", spec.Name); err != nil {
		return err
	}
	return d.topology.CreateTopic(ctx, spec)
}

// DeleteTopic implements driver.Driver: the AMQP 0-9-1 driver's.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	return d.topology.DeleteTopic(ctx, name)
}

// onePartition returns an error unless topic has one partition: a topic
// made with more (by the AMQP 0-9-1 driver) routes by a key this
// driver does not send.
func onePartition(topic string, partitions int) error {
	if partitions != 1 {
		return fmt.Errorf("topic %q has %d partitions: the AMQP 1.0 driver sends and receives on one (make the topic with partitionsPerTopic 1)", topic, partitions)
	}
	return nil
}

// NewProducer implements driver.Driver: a sender link to the topic's
// exchange with the routing key of its one queue per subscription, on
// a connection of its own. Messages are durable when messagePersistence
// is true.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	n, err := d.topology.Partitions(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	if err := onePartition(spec.Topic, n); err != nil {
		return nil, err
	}
	target := d.cfg.format.exchange(spec.Topic, routingKey)
	p, err := client.NewProducer(ctx, d.node(), 0, client.Link{Address: target}, d.topology.Persistent(), spec.MaxInFlight, ack)
	return p, pluginAdvice(err)
}

// pluginAdvice adds to the error of a node that answered in AMQP 0-9-1
// what to enable.
func pluginAdvice(err error) error {
	if errors.Is(err, client.ErrOtherProtocol) {
		return fmt.Errorf("%w: RabbitMQ 3 serves AMQP 1.0 with its plugin: rabbitmq-plugins enable rabbitmq_amqp1_0 (a local RabbitMQ started before brokerbench enabled it: local up rabbitmq --replace)", err)
	}
	return err
}

// routingKey is the routing key of a topic's one partition, as the AMQP
// 0-9-1 driver binds its queues.
const routingKey = "0"

// NewConsumer implements driver.Driver: the subscription's queue,
// declared and bound over AMQP 0-9-1 if new, and a receiver link from
// it on a connection of the consumer's own. Consumers of one
// subscription share its queue. A queue holds what was routed to it
// after it was made (no replay); the runner subscribes before it
// produces.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := checkName("subscription", spec.Subscription); err != nil {
		return nil, err
	}
	queues, err := d.topology.Subscribe(ctx, spec.Topic, spec.Subscription)
	if err != nil {
		return nil, err
	}
	if err := onePartition(spec.Topic, len(queues)); err != nil {
		return nil, err
	}
	// RabbitMQ 3's plugin rebases a flow on the deliveries it sent, not
	// on those on their way to the connection, and then sends more than
	// the credit: the consumer grants credit once it is spent (see
	// client.Credit). RabbitMQ 4 keeps the link's count in the queue.
	credit := client.Credit{Window: d.cfg.credit, WhenSpent: d.cfg.format == formatV1}
	c, err := client.NewConsumer(ctx, d.node(), 0, client.Link{Address: d.cfg.format.queue(queues[0])}, credit, consume)
	return c, pluginAdvice(err)
}

// Reread implements driver.Rereader: the AMQP 0-9-1 driver's, which
// reads the subscription's queue without taking its messages. A message
// sent over AMQP 1.0 with one data section reaches AMQP 0-9-1 as that
// section's bytes.
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	return d.topology.Reread(ctx, topic, subscription, found)
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() { d.topology.Close() }
