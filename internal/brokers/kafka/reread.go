package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// Reread implements driver.Rereader: a client of no group reads every
// partition of topic from its start offset to the end offset it had
// when Reread was called. Every subscription of a topic is meant to
// receive all of it, so subscription plays no part.
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	apiCtx, cancel := d.apiCtx(ctx)
	starts, err := d.admin.ListStartOffsets(apiCtx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = d.admin.ListEndOffsets(apiCtx, topic)
		if err == nil {
			err = ends.Error()
		}
	}
	cancel()
	if err != nil {
		return fmt.Errorf("re-read %q: list its offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	left := map[int32]int64{} // partition: its end offset, until read
	starts.Each(func(o kadm.ListedOffset) {
		if end, ok := ends.Lookup(topic, o.Partition); ok && end.Offset > o.Offset {
			from[o.Partition] = kgo.NewOffset().At(o.Offset)
			left[o.Partition] = end.Offset
		}
	})
	if len(left) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(d.cfg.clientOpts(scopeConsumer),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))...)
	if err != nil {
		return fmt.Errorf("re-read %q: %w", topic, err)
	}
	defer cl.Close()
	for len(left) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var fetchErr error
		fetches.EachError(func(_ string, p int32, err error) {
			fetchErr = fmt.Errorf("re-read %q partition %d: %w", topic, p, err)
		})
		if fetchErr != nil {
			return fetchErr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Partition]
			if !ok || r.Offset >= end {
				return // written after Reread began
			}
			found(r.Value)
			if r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return nil
}
