package nats

import (
	"net/url"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// LocalKind is the kind of local cluster brokerbench starts for NATS.
var LocalKind = &brokers.Local{Kind: "nats", Port: 4222, New: NewLocal, MaxNodes: 9,
	NoLinks: "nats-server resolves its peers with the system resolver, which brokerbench cannot point at a node's own links",
	Help: "NATS (nats) is built from the Go module proxy (needs the Go toolchain) and runs " +
		"with JetStream: one server on 127.0.0.1:4222, or --brokers N servers on " +
		"127.0.1.i joined by routes, which replicate streams.",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "nats", New: New, EndpointSettings: []string{"servers", "natsHostUrl"}, LocalListener: localListener,
		Capabilities: driver.Capabilities{Partitions: true, Replication: true, Replay: true, Written: true},
		Local:        LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "the NATS server's monitoring endpoint, /varz (JSON)",
			Serves: func(u *url.URL) bool { return strings.HasSuffix(u.Path, "/varz") },
			Read:   brokermetrics.HTTP(ParseVarz)},
		OMBClasses:  []string{"io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver"},
		OMBTopLevel: []string{"natsHostUrl", "storageType", "maxBytes"},
		Docs:        "docs/drivers/nats.md",
	})
}
