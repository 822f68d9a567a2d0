package main

import (
	"context"
	"errors"

	"github.com/brokerbench/brokerbench/internal/brokers/rocketmq"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newRocketMQ(port int) *local.Cluster { return rocketmq.NewLocal(port, 1) }

// rocketMQLocalCluster is the cluster name of a local RocketMQ node.
const rocketMQLocalCluster = "DefaultCluster"

// pointRocketMQDriver points OMB's RocketMQ 5 driver file at the local
// node: namesrvAddr becomes its name server's address, grpcEndpoint its
// proxy's, and clusterName its cluster's (the file's is a placeholder,
// "rocketmq-broker-xxxx", and OMB creates its topics on the cluster it
// names). The file's placeholder credentials are left: a node without
// ACLs ignores them.
func pointRocketMQDriver(text string, st local.Status) (string, error) {
	namesrv := st.Endpoints("namesrv")
	if len(namesrv) == 0 {
		return "", errors.New("the RocketMQ node has no name server")
	}
	var err error
	for _, s := range []struct{ key, value string }{
		{"namesrvAddr", namesrv[0]}, {"grpcEndpoint", st.Address()}, {"clusterName", rocketMQLocalCluster},
	} {
		if text, err = setRequired(text, "RocketMQ", s.key, s.value); err != nil {
			return "", err
		}
	}
	return text, nil
}

const rocketMQCounted = "the broker's counter of messages received (rocketmq_messages_in_total, its Prometheus endpoint), after less before"

// receivedRocketMQ reads the broker's count of the messages producers
// sent it. The broker makes the counter's series with the first message
// of a topic, so a broker without one has received none.
func receivedRocketMQ(ctx context.Context, st local.Status) (int64, error) {
	n, err := promCounter(ctx, st, "RocketMQ", "rocketmq_messages_in_total")
	if errors.Is(err, errNoSeries) {
		return 0, nil
	}
	return n, err
}

// cleanRocketMQ leaves the runs' topics: each run makes its own, the
// broker's counter counts what arrives, and the node is stopped with the
// comparison.
func cleanRocketMQ(context.Context, local.Status) error { return nil }
