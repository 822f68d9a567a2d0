package mqtt

import (
	"net/url"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// LocalKind is the kind of local server brokerbench starts for MQTT:
// one Mosquitto, which runs no cluster.
var LocalKind = &brokers.Local{Kind: "mosquitto", Port: 1883, New: NewLocal, MaxNodes: 1,
	NoLinks: "brokerbench does not carry a local Mosquitto's connections through the link proxy yet",
	Help: "MQTT (mosquitto) is Debian's mosquitto (installed with apt-get when brokerbench " +
		"runs as root): one server on 127.0.0.1:1883 with persistence; a mosquitto " +
		"service the system runs is left alone.",
	Endpoints: localEndpoints,
}

func init() {
	brokers.Register(brokers.Module{
		Name: "mqtt", New: New, EndpointSettings: []string{"serverUri"}, LocalListener: localListener,
		Capabilities: driver.Capabilities{AcksLevels: []string{"0", "1", "2"}},
		Local:        LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "the values the server retains on its $SYS/broker/# topics, at mqtt://host:port",
			Serves: func(u *url.URL) bool { return u.Scheme == "mqtt" || u.Scheme == "mqtts" },
			Read:   readSys},
		OMBClasses: []string{"io.openmessaging.benchmark.driver.mqtt5.MqttBenchmarkDriver"},
		Docs:       "docs/drivers/mqtt.md",
	})
}

// localListener names the listener of the local server a driver with
// config dc reaches: "tls" when it connects over TLS (tls: true, or a
// serverUri of ssl://, tls:// or mqtts://).
func localListener(dc *workload.DriverConfig) string {
	uri, _ := dc.Common.Get("serverUri")
	_, byScheme, _ := ParseServerURI(uri)
	if v, _ := dc.Common.Get("tls"); v == "true" || byScheme {
		return "tls"
	}
	return "plain"
}

// localEndpoints are the addresses a driver is given of the running
// local server: those of listener, as mqtts:// URLs for the "tls" one,
// since the address replaces the config's serverUri and its scheme.
func localEndpoints(st local.Status, listener string) []string {
	addrs := st.Endpoints(listener)
	if listener != "tls" {
		return addrs
	}
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "mqtts://" + a
	}
	return urls
}
