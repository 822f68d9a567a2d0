package rabbitmq

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"
)

// This file is the part of the driver that a driver of another protocol
// RabbitMQ serves on its AMQP listener (the AMQP 1.0 plugin, package
// rabbitmq/amqp10) reuses: the topics' exchanges, the subscriptions'
// queues and the topics' records are this driver's, made over AMQP
// 0-9-1, so that both drivers' topics are one thing (deleted, cleaned
// and re-read alike).

// Node is how a client reaches one node of the cluster the driver
// connects to, as the driver's amqpUris and TLS settings say.
type Node struct {
	// Addr is the node's AMQP listener, host:port.
	Addr string
	// TLS is the config of its TLS connections; nil: plain ones.
	TLS *tls.Config
	// Username and Password are the URI's; External says the client
	// certificate names the user instead (saslMechanism EXTERNAL).
	Username, Password string
	External           bool
	// Vhost is the URI's virtual host.
	Vhost string
}

// Nodes returns the nodes of the driver's URIs, in their order.
func (d *Driver) Nodes() []Node {
	var nodes []Node
	for _, raw := range d.cfg.uris {
		// Each URI was parsed when the config was validated.
		u, _ := amqp.ParseURI(raw)
		n := Node{Addr: net.JoinHostPort(u.Host, strconv.Itoa(u.Port)),
			Username: u.Username, Password: u.Password, External: d.cfg.sasl != nil, Vhost: u.Vhost}
		if u.Scheme == "amqps" {
			n.TLS = d.cfg.tls
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// Persistent reports whether messages are to be persisted
// (messagePersistence).
func (d *Driver) Persistent() bool { return d.cfg.persistent }

// QueueType is the x-queue-type of the subscriptions' queues: classic,
// quorum or stream.
func (d *Driver) QueueType() string { return d.cfg.queueType }

// Partitions returns topic's partition count, from its record; the
// error wraps driver.ErrTopicNotFound when it has none.
func (d *Driver) Partitions(ctx context.Context, topic string) (int, error) {
	r, err := d.lookup(ctx, topic)
	return r.partitions, err
}

// Subscribe declares and binds the queues of a subscription of topic,
// as the driver's consumers do, recording the subscription when it is
// new, and returns the queues' names by partition.
func (d *Driver) Subscribe(ctx context.Context, topic, subscription string) ([]string, error) {
	r, err := d.lookup(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := d.subscribe(ctx, topic, subscription, r); err != nil {
		return nil, err
	}
	queues := make([]string, r.partitions)
	for p := range queues {
		queues[p] = partitionQueue(subscription, p)
	}
	return queues, nil
}
