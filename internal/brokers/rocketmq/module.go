package rocketmq

import (
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// LocalKind is the kind of local cluster brokerbench starts for
// RocketMQ: a name server, and one broker with its proxy, or up to 3
// master brokers behind one proxy.
var LocalKind = &brokers.Local{Kind: "rocketmq", Port: usualPort, New: NewLocal, MaxNodes: 3,
	NoLinks:   "the proxy routes clients to the address its broker registers, which brokerbench cannot yet point at a node's own links",
	Endpoints: localEndpoints,
	Help: "RocketMQ (rocketmq) is installed from Maven Central (needs Java 17+ and Maven) and " +
		"runs a name server and one broker with its proxy in local mode (one JVM), the proxy's " +
		"gRPC endpoint on 127.0.0.1:8081; --brokers 2 or 3: broker i, a master of its own name, " +
		"on 127.0.1.i and one proxy in cluster mode on 127.0.2.2:8081; --heap-mb sets each broker's heap.",
}

// The OMB driver classes of RocketMQ: OMB's RocketMQ 5 driver (gRPC
// through a proxy) and its RocketMQ 4 driver (the remoting client).
const (
	ombDriverClass   = "io.openmessaging.benchmark.driver.rocketmq.RocketMQ5BenchmarkDriver"
	ombV4DriverClass = "io.openmessaging.benchmark.driver.rocketmq.RocketMQBenchmarkDriver"
)

func init() {
	brokers.Register(brokers.Module{
		Name: "rocketmq", New: New, EndpointSettings: []string{"grpcEndpoint", "namesrvAddr"}, LocalListener: localListener,
		// Replication is a broker deployment (master and slave brokers,
		// or a controller's), never a topic's setting; transactional
		// messages are one message each, committed or rolled back on
		// their own, not a group a consumer can read committed.
		Capabilities: driver.Capabilities{Partitions: true, Replay: true, Written: true},
		Local:        LocalKind,
		Metrics:      &brokers.Metrics{Endpoint: "Prometheus text at the broker's metrics port (/metrics), served by the broker itself (metricsExporterType PROM)"},
		// OMB's RocketMQ 4 driver file is read to be refused with its
		// reason (see parseConfig): its top-level settings are known so
		// that the reason, not an unknown setting, is what it gets.
		OMBClasses: []string{ombDriverClass, ombV4DriverClass},
		OMBTopLevel: []string{"namesrvAddr", "clusterName", "grpcEndpoint", "sendDelayMsg", "delayTimeInSec", "adminAccessKey", "adminSecretKey", "accessKey", "secretKey",
			"vipChannelEnabled", "maxMessageSize", "compressMsgBodyOverHowmuch", "batchCQ", "autoBatch", "batchMaxBytes", "batchMaxDelayMs", "totalBatchMaxBytes", "enableBackpressure", "backpressureConcurrency"},
		Docs: "docs/drivers/rocketmq.md",
	})
}

// localListener is the local node's listener a driver config connects
// to: "tls" when it asks for TLS.
func localListener(dc *workload.DriverConfig) string {
	if v, _ := dc.Common.Get("tls"); v == "true" {
		return "tls"
	}
	return "plain"
}
