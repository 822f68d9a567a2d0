package nats

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// rereadBatch is how many messages one fetch of a re-read asks for.
const rereadBatch = 1000

// Reread implements driver.Rereader: an ordered consumer (no durable
// state, no acknowledgements) reads the stream from its first message to
// the last it had when Reread began. Acknowledged messages stay in a
// stream of limits retention, so this is everything a subscription could
// receive, unless limits removed some: then the read is not complete.
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	js, err := d.admin()
	if err != nil {
		return err
	}
	s, err := js.Stream(ctx, topic)
	if err != nil {
		return fmt.Errorf("re-read stream %q: %w", topic, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("re-read stream %q: %w", topic, err)
	}
	st := info.State
	if st.Msgs == 0 && st.LastSeq == 0 {
		return nil
	}
	if st.FirstSeq > 1 || st.Msgs < st.LastSeq-st.FirstSeq+1 {
		return fmt.Errorf("re-read stream %q: holds %d of the %d messages written", topic, st.Msgs, st.LastSeq)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("re-read stream %q: %w", topic, err)
	}
	for {
		batch, err := cons.Fetch(rereadBatch, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("re-read stream %q: %w", topic, err)
		}
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("re-read stream %q: %w", topic, err)
			}
			if meta.Sequence.Stream > st.LastSeq {
				return nil // written after Reread began
			}
			found(m.Data())
			if meta.Sequence.Stream == st.LastSeq {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("re-read stream %q: %w", topic, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
