package main

import (
	"context"

	"github.com/brokerbench/brokerbench/internal/brokers/artemis"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newArtemis(port int) *local.Cluster { return artemis.NewLocal(port, 1) }

// pointArtemisDriver points OMB's Artemis driver file at the broker:
// brokerAddress becomes the core protocol's URL of its address (its
// acceptor takes the core protocol and AMQP 1.0).
func pointArtemisDriver(text string, st local.Status) (string, error) {
	return setRequired(text, "Artemis", "brokerAddress", "tcp://"+st.Address())
}

const artemisCounted = "not the broker's: the tool's own count of its measurement (an Artemis queue drops what its consumer acknowledged, and its management counters are not read here), so the CPU per message of OMB, whose count undercounts on a busy machine, is overstated"

// cleanArtemis leaves the runs' addresses and queues: the node is
// stopped with the comparison, and a queue without a consumer takes no
// client CPU.
func cleanArtemis(context.Context, local.Status) error { return nil }
