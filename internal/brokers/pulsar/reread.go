package pulsar

import (
	"context"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Reread implements driver.Rereader: a reader on every partition, from
// its earliest message to the last it held when the reader began. A
// reader has a subscription of its own that it removes when it closes,
// so the subscription re-read is left as it was. What the broker holds
// from the earliest message on includes every message the subscription
// has not acknowledged: a backlog is not trimmed.
func (d *Driver) Reread(ctx context.Context, topic, _ string, found func(value []byte)) error {
	names, err := d.partitionTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("re-read: %w", err)
	}
	cl, err := d.sharedClient()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := readAll(ctx, cl, name, found); err != nil {
			return fmt.Errorf("re-read %s: %w", name, err)
		}
	}
	return nil
}

// readAll calls found with every message of one partition, from its
// earliest to its last.
func readAll(ctx context.Context, cl pulsar.Client, name string, found func([]byte)) error {
	r, err := cl.CreateReader(pulsar.ReaderOptions{Topic: name, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		return err
	}
	defer r.Close()
	for r.HasNext() {
		msg, err := r.Next(ctx)
		if err != nil {
			return err
		}
		found(msg.Payload())
	}
	return ctx.Err()
}
