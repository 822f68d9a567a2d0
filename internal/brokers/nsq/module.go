package nsq

import (
	"net/url"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// LocalKind is the kind of local cluster brokerbench starts for NSQ: one
// nsqd, or up to 9 nsqd registered with one nsqlookupd.
var LocalKind = &brokers.Local{Kind: "nsq", Port: 4150, New: NewLocal, MaxNodes: 9,
	NoLinks:   "brokerbench does not carry a local nsqd's connections through the link proxy yet: go-nsq dials nsqd with a dialer of its own, not the driver's",
	Endpoints: localEndpoints,
	Help: "NSQ (nsq) is nsqd and nsqlookupd, built from the Go module proxy (needs the Go toolchain): one " +
		"nsqd on 127.0.0.1:4150, its HTTP API on a port of its own; --brokers N: nsqd i on 127.0.1.i, each " +
		"registered with one nsqlookupd on 127.0.2.1. nsqd nodes do not replicate: a message lives on the node it was published to. " +
		"--security plain,tls: every nsqd takes TLS clients with the cluster's client certificate alone, its HTTPS API on the tls port (nsqlookupd stays plain).",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "nsq", New: New, EndpointSettings: []string{"nsqdHttpAddress", "lookupdHttpAddress", "nsqdHost", "lookupHost"}, LocalListener: localListener,
		Capabilities: driver.Capabilities{Written: true},
		Local:        LocalKind,
		NoLeader:     "NSQ has no leaders: every nsqd serves the topics published to it alone, none leads another and none controls the cluster (nsqlookupd only tells consumers where topics are); aim the fault at a node id or at random",
		Metrics: &brokers.Metrics{Endpoint: "nsqd's statistics, /stats?format=json on its HTTP port",
			Serves: func(u *url.URL) bool { return strings.HasSuffix(u.Path, "/stats") },
			Read:   brokermetrics.HTTP(ParseStats)},
		OMBClasses:  []string{"io.openmessaging.benchmark.driver.nsq.NsqBenchmarkDriver"},
		OMBTopLevel: []string{"nsqdHost", "lookupHost"},
		Docs:        "docs/drivers/nsq.md",
	})
}

// localListener names the listener of a local nsqd the driver reaches:
// "tls" when its config asks for TLS, which a secured cluster serves
// (its HTTPS API, see localEndpoints); else its HTTP API. From either it
// learns the TCP port.
func localListener(dc *workload.DriverConfig) string {
	if v, _ := dc.Common.Get("tls"); v == "true" {
		return "tls"
	}
	return "http"
}

// localEndpoints are the addresses a driver is given of a running local
// cluster, whose listener it connects to: every nsqd's HTTPS API for
// "tls", else its HTTP API; then nsqlookupd's, if it has one, marked as
// such (plain HTTP: nsqlookupd has no TLS).
func localEndpoints(st local.Status, listener string) []string {
	port := "http"
	if listener == "tls" {
		port = httpsPort
	}
	var addrs []string
	var lookupd string
	for _, n := range st.Nodes {
		switch {
		case n.HasRole(roleNSQD):
			addrs = append(addrs, n.Addr(port))
		case n.HasRole(roleLookupd):
			lookupd = lookupdScheme + n.Addr("lookupd-http")
		}
	}
	if lookupd != "" {
		addrs = append(addrs, lookupd)
	}
	return addrs
}
