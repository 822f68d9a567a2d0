package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newRabbitMQ(port int) *local.Cluster { return rabbitmq.NewLocal(port, 1) }

// singlePartitionWorkloads are the default workloads with topics of one
// partition, for drivers that refuse more (OMB's RabbitMQ driver).
var singlePartitionWorkloads = []string{"bench/workloads/omb-fixed-20k-1kb-1-partition.yaml", "bench/workloads/omb-max-rate-100b-1-partition.yaml"}

// amqpURIs matches the amqpUris list of OMB's RabbitMQ driver file, its
// items in group 2.
var amqpURIs = regexp.MustCompile(`(?m)^(amqpUris:[ \t]*\n)((?:[ \t]*-[^\n]*(?:\n|$))+)`)

// pointRabbitMQDriver points OMB's RabbitMQ driver file at the broker:
// amqpUris becomes the one URI of its address (the default user, as the
// file's URI has it). The queue type (quorum) and the rest are left as
// the file has them: a quorum queue of one member runs on a single node.
func pointRabbitMQDriver(text string, st local.Status) (string, error) {
	m := amqpURIs.FindStringSubmatchIndex(text)
	if m == nil {
		return "", errors.New("OMB's RabbitMQ driver file lists no amqpUris")
	}
	return text[:m[4]] + "  - amqp://" + st.Address() + "\n" + text[m[5]:], nil
}

const rabbitMQCounted = "the broker's counter of messages received from publishers (rabbitmq_global_messages_received_total): a queue drops what its consumers acknowledge, so the broker cannot count what was published from what it holds"

// receivedRabbitMQ reads the broker's count of the messages publishers
// sent it, from its Prometheus endpoint.
func receivedRabbitMQ(ctx context.Context, st local.Status) (int64, error) {
	return promCounter(ctx, st, "RabbitMQ", "rabbitmq_global_messages_received_total")
}

// promCounter reads the node's Prometheus endpoint (its "metrics" port)
// and sums the counter name over its series.
func promCounter(ctx context.Context, st local.Status, product, name string) (int64, error) {
	eps := st.Endpoints("metrics")
	if len(eps) == 0 {
		return 0, fmt.Errorf("the %s node serves no metrics", product)
	}
	counters, _, err := brokermetrics.Prometheus(ctx, http.DefaultClient, "http://"+eps[0]+"/metrics")
	if err != nil {
		return 0, fmt.Errorf("read %s's metrics: %w", product, err)
	}
	return sumSeries(counters, name)
}

// errNoSeries is sumSeries' error for a counter of no series.
var errNoSeries = errors.New("no such counter among the broker's metrics")

// sumSeries sums the series of counter name among counters (by series
// key, as brokermetrics reads them), and says when there are none
// (errNoSeries).
func sumSeries(counters map[string]float64, name string) (int64, error) {
	var sum float64
	found := false
	for key, v := range counters {
		if key == name || strings.HasPrefix(key, name+"{") {
			sum, found = sum+v, true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s: %w", name, errNoSeries)
	}
	if sum < 0 || sum > 1e18 {
		return 0, fmt.Errorf("%s: %v is not a count", name, sum)
	}
	return int64(sum), nil
}

// cleanRabbitMQ leaves the runs' exchanges and queues: the AMQP protocol
// cannot list them, and the node is stopped with the comparison. What a
// consumer left in its queue is not counted (the counter counts what
// arrives) and takes no CPU without a consumer.
func cleanRabbitMQ(context.Context, local.Status) error { return nil }
