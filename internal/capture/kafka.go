package capture

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// kafkaCodecs names Kafka's compression attribute values.
var kafkaCodecs = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// KafkaSource returns the Source of a Kafka topic, read from its end
// without a consumer group (kafka.Tailer). brokers are comma-separated
// addresses, which replace the driver file's bootstrap.servers;
// driverFile (empty: none) gives the connection and security settings
// as for a run. A driver file of another broker is an error wrapping
// workload.ErrInvalid.
func KafkaSource(brokers, driverFile, topic string) (Source, error) {
	var dc *workload.DriverConfig
	if driverFile != "" {
		var err error
		if dc, err = workload.LoadDriver(driverFile); err != nil {
			return nil, err
		}
		if dc.Name != "kafka" {
			return nil, fmt.Errorf("%w: %s is a driver file of %q: capture reads Kafka topics only", workload.ErrInvalid, driverFile, dc.Name)
		}
	}
	var endpoints []string
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			endpoints = append(endpoints, b)
		}
	}
	tailer, err := kafka.NewTailer(dc, endpoints, topic)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, started func(int), each func(Record)) error {
		return tailer.Tail(ctx, started, func(r *kgo.Record) { each(kafkaRecord(r)) })
	}, nil
}

// kafkaRecord is what a capture sees of r.
func kafkaRecord(r *kgo.Record) Record {
	rec := Record{Partition: r.Partition, Key: r.Key, Value: r.Value, Time: r.Timestamp, Codec: "other"}
	if c := int(r.Attrs.CompressionType()); c < len(kafkaCodecs) {
		rec.Codec = kafkaCodecs[c]
	}
	for _, h := range r.Headers {
		rec.HeaderBytes += len(h.Key) + len(h.Value)
	}
	return rec
}
