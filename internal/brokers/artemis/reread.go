package artemis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// rereadCredit bounds the messages a re-read has in flight.
const rereadCredit = 1000

// Reread implements driver.Rereader: the subscription's queue is browsed
// (a receiver with AMQP's distribution mode "copy", which takes no
// message from the queue) for as many messages as the queue counts, on
// every node of a cluster. With the run's consumers closed, the queues
// hold every message they did not accept, once the nodes have forwarded
// what they were forwarding to each other: a cluster's re-read waits
// for that first, and fails if a node is not reached or still forwards.
// A driver without a management address, which cannot count the queue,
// does not offer it (see New).
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	q := queueName(topic, subscription)
	if len(d.nodes) > 1 {
		if err := d.waitForwarded(ctx); err != nil {
			return fmt.Errorf("re-read queue %s: %w", q, err)
		}
	}
	for _, n := range d.nodes {
		if err := d.browse(ctx, n, topic, q, found); err != nil {
			if len(d.nodes) > 1 {
				err = fmt.Errorf("node %s: %w", n.broker.Addr, err)
			}
			return fmt.Errorf("re-read queue %s: %w", q, err)
		}
	}
	return nil
}

// browse calls found with the value of every message queue q of topic
// holds on node n.
func (d *Driver) browse(ctx context.Context, n *node, topic, q string, found func(value []byte)) error {
	_, m, err := d.manage(ctx, n)
	if err != nil {
		return err
	}
	var count int64
	if err := m.attribute(ctx, "queue."+q, "messageCount", &count); err != nil {
		return fmt.Errorf("count its messages: %w", err)
	}
	if count == 0 {
		return nil
	}
	conn, err := n.broker.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	r, err := sess.NewReceiver(ctx, topic+"::"+q, &amqp.ReceiverOptions{Credit: int32(min(count, rereadCredit)),
		SourceDistributionMode: amqp.SourceDistributionModeCopy})
	if err != nil {
		return fmt.Errorf("browse it: %w", err)
	}
	for range count {
		msg, err := r.Receive(ctx, nil)
		if err != nil {
			return err
		}
		found(msg.GetData())
		// Settling a browsed message gives the link its credit back.
		if err := r.AcceptMessage(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

// forwardPrefix starts the names of the queues in which a node of a
// cluster keeps the messages it forwards to another node, one queue per
// other node ("store and forward").
const forwardPrefix = "$.artemis.internal.sf."

// forwardWait bounds the wait for a cluster's nodes to forward what they
// hold for each other.
const forwardWait = 10 * time.Second

// waitForwarded returns nil once no node of the cluster holds messages
// to forward to another, or an error saying how many each still holds
// after forwardWait (a node that does not answer holds them until it
// does).
func (d *Driver) waitForwarded(ctx context.Context) error {
	deadline := time.Now().Add(forwardWait)
	for {
		held, err := d.forwarding(ctx)
		if err != nil || len(held) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, nodes still hold messages to forward to others (%s): the re-read would miss them",
				forwardWait, strings.Join(held, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// forwarding lists the nodes that hold messages to forward to another
// node, and how many ("127.0.1.1:61616: 12").
func (d *Driver) forwarding(ctx context.Context) ([]string, error) {
	var held []string
	var errs []error
	for _, n := range d.nodes {
		_, m, err := d.manage(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var names []string
		if err := m.invoke(ctx, "broker", "getQueueNames", &names); err != nil {
			errs = append(errs, fmt.Errorf("node %s: list its queues: %w", n.broker.Addr, err))
			continue
		}
		var total int64
		for _, name := range names {
			if !strings.HasPrefix(name, forwardPrefix) {
				continue
			}
			var count int64
			if err := m.attribute(ctx, "queue."+name, "messageCount", &count); err != nil {
				errs = append(errs, fmt.Errorf("node %s: count the messages of %s: %w", n.broker.Addr, name, err))
			}
			total += count
		}
		if total > 0 {
			held = append(held, fmt.Sprintf("%s: %d", n.broker.Addr, total))
		}
	}
	return held, errors.Join(errs...)
}
