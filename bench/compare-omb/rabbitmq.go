package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

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
	eps := st.Endpoints("metrics")
	if len(eps) == 0 {
		return 0, errors.New("the RabbitMQ node serves no metrics")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+eps[0]+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read RabbitMQ's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read RabbitMQ's metrics: %s", resp.Status)
	}
	v, err := promCounter(resp.Body, "rabbitmq_global_messages_received_total")
	if err != nil {
		return 0, fmt.Errorf("RabbitMQ's metrics: %w", err)
	}
	return v, nil
}

// promCounter sums the samples of the counter name in a Prometheus text
// exposition (every label set of it), and says when there are none.
func promCounter(r io.Reader, name string) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
			continue // another metric, or a longer name
		}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return 0, fmt.Errorf("%s: a sample without the end of its labels: %q", name, line)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s: a sample without a value: %q", name, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > 1e18 {
			return 0, fmt.Errorf("%s: %q is not a count", name, fields[0])
		}
		sum, found = sum+v, true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no sample of %s", name)
	}
	if sum > 1e18 {
		return 0, fmt.Errorf("%s: %v is not a count", name, sum)
	}
	return int64(sum), nil
}

// cleanRabbitMQ leaves the runs' exchanges and queues: the AMQP protocol
// cannot list them, and the node is stopped with the comparison. What a
// consumer left in its queue is not counted (the counter counts what
// arrives) and takes no CPU without a consumer.
func cleanRabbitMQ(context.Context, local.Status) error { return nil }
