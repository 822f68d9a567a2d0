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

// broker is one broker both OMB and brokerbench drive.
type broker struct {
	name       string // as -brokers names it: brokerbench's local kind
	module     string // OMB's driver module
	driverFile string // OMB's driver file, relative to the checkout
	// local is the single-node broker the comparison starts.
	local func(port int) *local.Cluster
	// pointAt returns OMB's driver file pointed at the broker on addr.
	pointAt func(text, addr string) (string, error)
	// stored counts the messages the broker at addr holds.
	stored func(ctx context.Context, addr string) (int64, error)
	// clean deletes what the runs left on the broker at addr.
	clean func(ctx context.Context, addr string) error
}

// brokers are the brokers the comparison supports, by name.
var brokers = map[string]broker{
	"kafka": {name: "kafka", module: "driver-kafka", driverFile: "driver-kafka/kafka-throughput.yaml",
		local: func(port int) *local.Cluster { return kafka.NewLocal(port, 1) }, pointAt: pointKafkaDriver, stored: storedKafka, clean: cleanKafka},
}

var (
	bootstrapLine   = regexp.MustCompile(`(?m)^(\s*bootstrap\.servers\s*=\s*)\S*[ \t]*$`)
	replicationLine = regexp.MustCompile(`(?m)^(replicationFactor:\s*)\d+[ \t]*$`)
	minISRLine      = regexp.MustCompile(`(?m)^(\s*min\.insync\.replicas\s*=\s*)\d+[ \t]*$`)
)

// pointKafkaDriver points OMB's Kafka driver file at one broker on addr:
// bootstrap.servers becomes addr, and a replication factor and
// min.insync.replicas above 1 become 1 (a single node holds one replica).
// Everything else is left as the file has it.
func pointKafkaDriver(text, addr string) (string, error) {
	if !bootstrapLine.MatchString(text) {
		return "", errors.New("OMB's Kafka driver file sets no bootstrap.servers")
	}
	text = bootstrapLine.ReplaceAllString(text, "${1}"+addr)
	text = replicationLine.ReplaceAllString(text, "${1}1")
	return minISRLine.ReplaceAllString(text, "${1}1"), nil
}

// storedKafka counts the messages in every topic but Kafka's own: the
// sum of their partitions' end offsets less their start offsets.
func storedKafka(ctx context.Context, addr string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
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
func cleanKafka(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
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
