package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// Tail bounds: what a tail holds in memory at most, whatever the topic's
// traffic (franz-go buffers one fetch of at most tailFetchBytes).
const (
	tailFetchBytes          = 8 << 20
	tailFetchPartitionBytes = 1 << 20
)

// Tailer reads one topic as it is written, without disturbing it: a
// client of no consumer group (nothing joins, nothing is committed) reads
// every partition from the end offset it has when Tail is called. Its
// settings are fixed once made; each call of Tail reads with a client of
// its own.
type Tailer struct {
	cfg   *config
	topic string
}

// NewTailer validates the settings of a Tailer of topic: dc gives the
// connection and security settings, as for a run (nil: plaintext to
// endpoints); endpoints, when set, replace its bootstrap.servers. Bad
// settings are errors wrapping workload.ErrInvalid.
func NewTailer(dc *workload.DriverConfig, endpoints []string, topic string) (*Tailer, error) {
	if dc == nil {
		dc = &workload.DriverConfig{Name: "kafka", Source: "--broker", Format: workload.Native}
	}
	cfg, err := parseConfig(dc, endpoints, nil)
	if err != nil {
		return nil, err
	}
	return &Tailer{cfg: cfg, topic: topic}, nil
}

// Tail reads the topic until ctx ends. started is called once with the
// topic's partition count before the first record; each is called for
// every record, from the calling goroutine, and must not keep the
// record. Tail returns nil when ctx ends, an error wrapping
// workload.ErrInvalid for a topic that does not exist, or the broker's
// error. Partitions added after the call are not read.
func (t *Tailer) Tail(ctx context.Context, started func(partitions int), each func(*kgo.Record)) error {
	cfg, topic := t.cfg, t.topic
	admin, err := kgo.NewClient(cfg.clientOpts(scopeClient)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	apiCtx, cancel := context.WithTimeout(ctx, ms(cfg.client, "default.api.timeout.ms"))
	ends, err := kadm.NewClient(admin).ListEndOffsets(apiCtx, topic)
	cancel()
	admin.Close()
	if err == nil {
		err = ends.Error()
	}
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition) || (err == nil && len(ends[topic]) == 0):
		return fmt.Errorf("%w: topic %q does not exist on %s: check --topic", workload.ErrInvalid, topic, strings.Join(cfg.seeds, ","))
	case err != nil:
		return fmt.Errorf("kafka at %s: list the end offsets of %q: %w", strings.Join(cfg.seeds, ","), topic, err)
	}
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { from[o.Partition] = kgo.NewOffset().At(o.Offset) })
	cl, err := kgo.NewClient(append(cfg.clientOpts(scopeConsumer),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxBytes(tailFetchBytes),
		kgo.FetchMaxPartitionBytes(tailFetchPartitionBytes),
		kgo.MaxConcurrentFetches(1),
		kgo.FetchMaxWait(ms(cfg.consumer, "fetch.max.wait.ms")),
	)...)
	if err != nil {
		return fmt.Errorf("kafka consumer: %w", err)
	}
	defer cl.Close()
	started(len(from))
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fetchErr error
		fetches.EachError(func(_ string, p int32, err error) {
			if fetchErr == nil && !errors.Is(err, context.Canceled) {
				fetchErr = fmt.Errorf("read %q partition %d: %w", topic, p, err)
			}
		})
		if fetchErr != nil {
			return fetchErr
		}
		fetches.EachRecord(each)
	}
}
