package nsq

import (
	"net/url"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// LocalKind is the kind of local server brokerbench starts for NSQ: one
// nsqd. nsqd nodes share no data (a topic's messages live on the node
// they were published to, without replicas), so several would measure
// little more than one each.
var LocalKind = &brokers.Local{Kind: "nsq", Port: 4150, New: NewLocal, MaxNodes: 1,
	NoLinks: "brokerbench does not carry a local nsqd's connections through the link proxy yet: go-nsq dials nsqd with a dialer of its own, not the driver's",
	Help: "NSQ (nsq) is nsqd, built from the Go module proxy (needs the Go toolchain): one " +
		"node on 127.0.0.1:4150, its HTTP API on the next port.",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "nsq", New: New, EndpointSetting: "nsqdHttpAddress", LocalListener: localListener,
		Capabilities: driver.Capabilities{Written: true},
		Local:        LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "nsqd's statistics, /stats?format=json on its HTTP port",
			Serves: func(u *url.URL) bool { return strings.HasSuffix(u.Path, "/stats") },
			Read:   brokermetrics.HTTP(ParseStats)},
		OMBClasses:  []string{"io.openmessaging.benchmark.driver.nsq.NsqBenchmarkDriver"},
		OMBTopLevel: []string{"nsqdHost", "lookupHost"},
		Docs:        "docs/drivers/nsq.md",
	})
}

// localListener names the listener of a local nsqd the driver reaches:
// its HTTP API, from which it learns the TCP port.
func localListener(*workload.DriverConfig) string { return "http" }
