package artemis

import (
	"context"
	"fmt"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// rereadCredit bounds the messages a re-read has in flight.
const rereadCredit = 1000

// Reread implements driver.Rereader: the subscription's queue is browsed
// (a receiver with AMQP's distribution mode "copy", which takes no
// message from the queue) for as many messages as the queue counts. With
// the run's consumers closed, the queue holds every message they did not
// accept. A driver without a management address, which cannot count
// the queue, does not offer it (see New).
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	q := queueName(topic, subscription)
	_, m, err := d.adminConn(ctx)
	if err != nil {
		return fmt.Errorf("re-read queue %s: %w", q, err)
	}
	var count int64
	if err := m.attribute(ctx, "queue."+q, "messageCount", &count); err != nil {
		return fmt.Errorf("re-read queue %s: count its messages: %w", q, err)
	}
	if count == 0 {
		return nil
	}
	conn, err := d.broker().Connect(ctx)
	if err != nil {
		return fmt.Errorf("re-read queue %s: %w", q, err)
	}
	defer conn.Close()
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return fmt.Errorf("re-read queue %s: %w", q, err)
	}
	r, err := sess.NewReceiver(ctx, topic+"::"+q, &amqp.ReceiverOptions{Credit: int32(min(count, rereadCredit)),
		SourceDistributionMode: amqp.SourceDistributionModeCopy})
	if err != nil {
		return fmt.Errorf("re-read queue %s: browse it: %w", q, err)
	}
	for range count {
		msg, err := r.Receive(ctx, nil)
		if err != nil {
			return fmt.Errorf("re-read queue %s: %w", q, err)
		}
		found(msg.GetData())
		// Settling a browsed message gives the link its credit back.
		if err := r.AcceptMessage(ctx, msg); err != nil {
			return fmt.Errorf("re-read queue %s: %w", q, err)
		}
	}
	return nil
}
