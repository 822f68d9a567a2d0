package artemis

import (
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// LocalKind is the kind of local cluster brokerbench starts for Artemis:
// one broker, or a symmetric cluster of up to 9. Its port is that of
// Artemis' own default acceptor, 61616, which speaks AMQP 1.0 as well as
// Artemis' core protocol; AMQP's usual 5672 is RabbitMQ's.
var LocalKind = &brokers.Local{Kind: "artemis", Port: 61616, New: NewLocal, MaxNodes: 9,
	NoLinks: "brokerbench does not carry a local Artemis cluster's connections through the link proxy yet",
	Help: "ActiveMQ Artemis (artemis) is installed from Maven Central (needs Java 17+ and Maven) and " +
		"runs one broker on 127.0.0.1:61616, AMQP 1.0 and Artemis' core protocol on one acceptor, or " +
		"--brokers N on 127.0.1.i in a symmetric cluster that forwards messages on demand, without " +
		"replicas; --heap-mb sets each one's heap.",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "artemis", New: New, EndpointSettings: []string{"url", "brokerAddress"}, LocalListener: localListener,
		// A topic is an address without partitions; a subscription's
		// queue holds only what was routed to it after it was made; no
		// broker keeps replicas of another's messages. A cluster's
		// driver counts no written messages (see cluster).
		Capabilities: driver.Capabilities{Written: true},
		Local:        LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "the Jolokia agent of its web console (JMX over HTTP), /console/jolokia",
			Serves: servesJolokia, Read: readJolokia},
		OMBClasses:  []string{"io.openmessaging.benchmark.driver.artemis.ArtemisBenchmarkDriver"},
		OMBTopLevel: []string{"brokerAddress"},
		Docs:        "docs/drivers/artemis.md",
	})
}

// localListener names the listener of a local broker a driver with
// config dc reaches: "tls" when it connects over TLS.
func localListener(dc *workload.DriverConfig) string {
	u, _ := dc.Common.Get("url")
	if v, _ := dc.Common.Get("tls"); v == "true" || strings.HasPrefix(u, "amqps://") {
		return "tls"
	}
	return "plain"
}
