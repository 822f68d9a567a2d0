package mqtt

import (
	"net/url"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// LocalKind is the kind of local server brokerbench starts for MQTT:
// one Mosquitto, which runs no cluster.
var LocalKind = &brokers.Local{Kind: "mosquitto", Port: 1883, New: NewLocal, MaxNodes: 1,
	NoLinks: "brokerbench does not carry a local Mosquitto's connections through the link proxy yet",
	Help: "MQTT (mosquitto) is Debian's mosquitto (installed with apt-get when brokerbench " +
		"runs as root): one server on 127.0.0.1:1883 with persistence; a mosquitto " +
		"service the system runs is left alone.",
}

func init() {
	brokers.Register(brokers.Module{
		Name: "mqtt", New: New, EndpointSettings: []string{"serverUri"},
		Capabilities: driver.Capabilities{AcksLevels: []string{"0", "1", "2"}},
		Local:        LocalKind,
		Metrics: &brokers.Metrics{Endpoint: "the values the server retains on its $SYS/broker/# topics, at mqtt://host:port",
			Serves: func(u *url.URL) bool { return u.Scheme == "mqtt" },
			Read:   readSys},
		OMBClasses: []string{"io.openmessaging.benchmark.driver.mqtt5.MqttBenchmarkDriver"},
		Docs:       "docs/drivers/mqtt.md",
	})
}
