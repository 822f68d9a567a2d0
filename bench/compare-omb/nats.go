package main

import (
	"context"
	"fmt"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/brokerbench/brokerbench/internal/brokers/nats"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newNATS(port int) *local.Cluster { return nats.NewLocal(port, 1) }

// pointNATSDriver points OMB's NATS driver file at the server:
// natsHostUrl becomes its address, and a replication factor above 1
// becomes 1 (a single server holds one replica of a stream).
func pointNATSDriver(text string, st local.Status) (string, error) {
	text, err := setRequired(text, "NATS", "natsHostUrl", st.Address())
	if err != nil {
		return "", err
	}
	return setAll(text, replicationLine, "1"), nil
}

const natsCounted = "the messages the server holds: its JetStream streams' message counts"

// withJetStream connects to the server st describes and calls f with its
// JetStream API.
func withJetStream(st local.Status, f func(js jetstream.JetStream) error) error {
	nc, err := natsgo.Connect("nats://" + st.Address())
	if err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	return f(js)
}

// storedNATS counts the messages in every stream.
func storedNATS(ctx context.Context, st local.Status) (int64, error) {
	var n int64
	err := withJetStream(st, func(js jetstream.JetStream) error {
		streams := js.ListStreams(ctx)
		for info := range streams.Info() {
			n += int64(info.State.Msgs)
		}
		return streams.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("count the messages stored: %w", err)
	}
	return n, nil
}

// cleanNATS deletes every stream.
func cleanNATS(ctx context.Context, st local.Status) error {
	return withJetStream(st, func(js jetstream.JetStream) error {
		names := js.StreamNames(ctx)
		var all []string
		for name := range names.Name() {
			all = append(all, name)
		}
		if err := names.Err(); err != nil {
			return fmt.Errorf("list the runs' streams: %w", err)
		}
		for _, name := range all {
			if err := js.DeleteStream(ctx, name); err != nil {
				return fmt.Errorf("delete stream %s: %w", name, err)
			}
		}
		return nil
	})
}
