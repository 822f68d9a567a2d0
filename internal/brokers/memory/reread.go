package memory

import (
	"context"
	"fmt"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Rereader = (*Driver)(nil)

// Reread implements driver.Rereader: every partition's log from its
// start, as it was when Reread was called. The reference broker keeps
// every message, so this is all a subscription of the topic could
// receive.
func (d *Driver) Reread(ctx context.Context, topic, subscription string, found func(value []byte)) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	d.b.mu.Lock()
	t, ok := d.b.topics[topic]
	var logs [][]entry
	if ok {
		// Entries are never changed once appended: a copy of the slice
		// headers is a snapshot.
		logs = make([][]entry, len(t.logs))
		copy(logs, t.logs)
	}
	d.b.mu.Unlock()
	if !ok {
		return fmt.Errorf("re-read %q: %w", topic, driver.ErrTopicNotFound)
	}
	for _, l := range logs {
		for _, e := range l {
			if err := ctx.Err(); err != nil {
				return err
			}
			found(e.value)
		}
	}
	return nil
}
