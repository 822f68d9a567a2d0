package redis

import (
	"context"
	"fmt"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// rereadPage is how many entries one XRANGE of a re-read returns.
const rereadPage = 1000

// Reread implements driver.Rereader: every partition stream with XRANGE,
// from its first entry to the last one it had when Reread began. Entries
// stay in a stream when they are acknowledged, so this is everything a
// subscription could receive, unless the stream was trimmed (maxLen):
// then entries are gone and the read is not complete.
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	n, err := d.partitions(ctx, topic)
	if err != nil {
		return fmt.Errorf("re-read: %w", err)
	}
	for p := range n {
		key := streamKey(topic, p)
		info, err := d.rdb.XInfoStream(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("re-read stream %q: %w", key, err)
		}
		if info.Length < info.EntriesAdded {
			return fmt.Errorf("re-read stream %q: %d of its %d entries were trimmed", key, info.EntriesAdded-info.Length, info.EntriesAdded)
		}
		if info.Length == 0 {
			continue
		}
		last, from := info.LastGeneratedID, "-"
		for {
			page, err := d.rdb.XRangeN(ctx, key, from, last, rereadPage).Result()
			if err != nil {
				return fmt.Errorf("re-read stream %q: %w", key, err)
			}
			for _, m := range page {
				v, _ := m.Values["v"].(string)
				found([]byte(v))
			}
			if len(page) < rereadPage || page[len(page)-1].ID == last {
				break
			}
			from = "(" + page[len(page)-1].ID
		}
	}
	return nil
}
