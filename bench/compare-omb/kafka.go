package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newKafka(port int) *local.Cluster { return kafka.NewLocal(port, 1) }

var (
	bootstrapLine   = regexp.MustCompile(`(?m)^(\s*bootstrap\.servers\s*=\s*)\S*[ \t]*$`)
	replicationLine = regexp.MustCompile(`(?m)^(replicationFactor:\s*)\d+[ \t]*$`)
	minISRLine      = regexp.MustCompile(`(?m)^(\s*min\.insync\.replicas\s*=\s*)\d+[ \t]*$`)
)

// pointKafkaDriver points OMB's Kafka driver file at the broker:
// bootstrap.servers becomes its address, and a replication factor and
// min.insync.replicas above 1 become 1 (a single node holds one replica).
// Everything else is left as the file has it.
func pointKafkaDriver(text string, st local.Status) (string, error) {
	if !bootstrapLine.MatchString(text) {
		return "", errors.New("OMB's Kafka driver file sets no bootstrap.servers")
	}
	text = bootstrapLine.ReplaceAllString(text, "${1}"+st.Address())
	text = replicationLine.ReplaceAllString(text, "${1}1")
	return minISRLine.ReplaceAllString(text, "${1}1"), nil
}

const kafkaCounted = "the messages the broker holds: its topics' end offsets less their start offsets"

// storedKafka counts the messages in every topic but Kafka's own: the
// sum of their partitions' end offsets less their start offsets.
func storedKafka(ctx context.Context, st local.Status) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Address()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil || len(topics) == 0 {
		return 0, err
	}
	ends, err := adm.ListEndOffsets(ctx, topics.Names()...)
	if err != nil {
		return 0, fmt.Errorf("count the messages stored: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics.Names()...)
	if err != nil {
		return 0, fmt.Errorf("count the messages stored: %w", err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && o.Err == nil && s.Err == nil {
			n += o.Offset - s.Offset
		}
	})
	return n, nil
}

// cleanKafka deletes every topic but Kafka's own.
func cleanKafka(ctx context.Context, st local.Status) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Address()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list the runs' topics: %w", err)
	}
	if names := topics.Names(); len(names) > 0 {
		if _, err := adm.DeleteTopics(ctx, names...); err != nil {
			return fmt.Errorf("delete the runs' topics: %w", err)
		}
	}
	return nil
}
