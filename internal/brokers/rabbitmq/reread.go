package rabbitmq

import (
	"context"
	"fmt"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// Reread implements driver.Rereader for classic and quorum queues: each
// of the subscription's queues is read with basic.get, without
// acknowledging, until it has no message ready; closing the channel puts
// every message back. A queue gives a message up only when a consumer
// acknowledged it, so with the run's consumers closed this is everything
// the subscription was still owed. Stream queues cannot be read to their
// end over AMQP, which does not say where a stream ends: their error
// wraps driver.ErrNoReread.
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	if d.cfg.queueType == "stream" {
		return fmt.Errorf("re-read %s: %w: AMQP reads a stream queue from an offset but does not say where it ends (the rabbitmq-stream driver can)", subscription, driver.ErrNoReread)
	}
	r, err := d.lookup(ctx, topic)
	if err != nil {
		return fmt.Errorf("re-read %s: %w", subscription, err)
	}
	conn, err := d.dial(ctx, "re-read")
	if err != nil {
		return fmt.Errorf("re-read %s: %w", subscription, err)
	}
	defer conn.Close()
	// basic.get takes no context: closing the connection ends a wait.
	defer context.AfterFunc(ctx, func() { _ = conn.Close() })()
	for p := range r.partitions {
		q := partitionQueue(subscription, p)
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("re-read queue %s: %w", q, err)
		}
		for {
			m, ok, err := ch.Get(q, false)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return fmt.Errorf("re-read queue %s: %w", q, err)
			}
			if !ok {
				break
			}
			found(m.Body)
		}
		// The messages taken go back to the queue, in their order.
		if err := ch.Close(); err != nil {
			return fmt.Errorf("re-read queue %s: %w", q, err)
		}
	}
	return nil
}
