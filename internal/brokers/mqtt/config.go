package mqtt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// ombTopicPrefix is the topic prefix of OMB's MQTT driver when its file
// gives none.
const ombTopicPrefix = "benchmark"

// settings are the driver's settings by section, with their defaults.
// The names are those of OMB's MQTT 5 driver file: its client section is
// commonConfig, its consumer section consumerConfig.
var settings = map[string]map[string]string{
	"common": {
		"serverUri": "tcp://127.0.0.1:1883", // tcp:// or mqtt://; ssl://, tls:// or mqtts:// turn TLS on
		"username":  "", "password": "",
		"topicPrefix": "",  // MQTT topics are PREFIX/NAME ("": NAME)
		"qos":         "1", // OMB's client.qos: publishing and subscribing
	},
	"topic": {},
	"producer": {
		// The publishing QoS, as MQTT names it or as brokerbench's
		// reports and checks do ("acks"); "": the common qos.
		"qos": "", "acks": "",
	},
	"consumer": {
		"cleanSession":                 "true",
		"sessionExpiryIntervalSeconds": "259200", // when cleanSession is false
		"sessionExpiryInterval":        "",       // the name OMB's driver reads; "": the one above
		"receiveMaximum":               "256",
	},
}

// secretKeys are settings that never reach an output.
var secretKeys = []string{"password", "tlsTrustStorePassword", "tlsKeyStorePassword"}

// config is a validated driver configuration.
type config struct {
	addr               string      // host:port
	tls                *tls.Config // nil: plain connections
	username, password string
	topicPrefix        string
	qos                byte // of publishing and of the subscriptions
	cleanSession       bool
	sessionExpiry      uint32 // seconds, when cleanSession is false
	receiveMaximum     uint16
	effective          map[string]workload.Properties
}

// parseConfig validates every setting of dc; endpoints, when given,
// replace serverUri; local are the credentials of a local broker
// brokerbench secured, used where dc gives none.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "MQTT", settings)
	var errs []error
	uri := s.String("common", "serverUri")
	if len(endpoints) > 0 {
		uri = endpoints[0]
		if len(endpoints) > 1 {
			errs = append(errs, fmt.Errorf("%s: the MQTT driver connects to one server; got %d addresses", dc.Source, len(endpoints)))
		}
	}
	addr, tlsByScheme, err := ParseServerURI(uri)
	if err != nil {
		s.Fail("common", "serverUri", "%v", err)
	}
	prefix := s.String("common", "topicPrefix")
	if _, given := dc.Common.Get("topicPrefix"); !given && dc.Format == workload.OMB {
		prefix = ombTopicPrefix
	}
	c := &config{addr: addr, username: s.String("common", "username"), password: s.String("common", "password"),
		topicPrefix: strings.TrimSuffix(prefix, "/")}
	if local != nil && c.username == "" && c.password == "" {
		c.username, c.password = local.Username, local.Password
	}
	c.tls = driver.ClientTLS(s, tlsByScheme, local)
	if strings.ContainsAny(c.topicPrefix, "+#") {
		s.Fail("common", "topicPrefix", "an MQTT topic name holds no wildcard (+, #), got %q", c.topicPrefix)
	}
	c.qos = publishQoS(s)
	c.cleanSession = s.Bool("consumer", "cleanSession")
	expiryKey := "sessionExpiryIntervalSeconds"
	if s.String("consumer", "sessionExpiryInterval") != "" {
		expiryKey = "sessionExpiryInterval"
	}
	c.sessionExpiry = uint32(min(s.Int("consumer", expiryKey, 0), 1<<32-1))
	if n := s.Int("consumer", "receiveMaximum", 1); n > 65535 {
		s.Fail("consumer", "receiveMaximum", "must be at most 65535, got %d", n)
	} else {
		c.receiveMaximum = uint16(max(n, 0))
	}
	if err := errors.Join(append(errs, s.Err())...); err != nil {
		return nil, err
	}
	q := strconv.Itoa(int(c.qos))
	c.effective = s.Effective(append([]string{"serverUri", "qos", "acks", "sessionExpiryInterval"}, secretKeys...)...)
	c.effective["common"] = append(workload.Properties{{Key: "serverUri", Value: uri}}, c.effective["common"]...)
	c.effective["producer"] = append(c.effective["producer"], workload.Property{Key: "acks", Value: q}, workload.Property{Key: "qos", Value: q})
	if c.password != "" {
		c.effective["common"] = append(c.effective["common"], workload.Property{Key: "password", Value: "(set)"})
	}
	c.effective["consumer"] = append(c.effective["consumer"], workload.Property{Key: "subscriptionQos", Value: q})
	return c, nil
}

// publishQoS returns the QoS of publishing: the producer's qos or acks
// (one of them), else the common qos.
func publishQoS(s *driver.Settings) byte {
	section, key := "common", "qos"
	qos, acks := s.String("producer", "qos"), s.String("producer", "acks")
	switch {
	case qos != "" && acks != "" && qos != acks:
		s.Fail("producer", "acks", "is the publishing QoS, and qos says %s: set one of them", qos)
	case qos != "":
		section = "producer"
	case acks != "":
		section, key = "producer", "acks"
	}
	v := s.String(section, key)
	if v != "0" && v != "1" && v != "2" {
		s.Fail(section, key, "is an MQTT QoS level: 0 (at most once), 1 (at least once) or 2 (exactly once), got %q", v)
		return 1
	}
	return v[0] - '0'
}

// ParseServerURI returns the host:port of an MQTT server given as
// tcp://host:port, mqtt://host:port, ssl://, tls://, mqtts:// (which
// ask for TLS) or host:port; the port defaults to 1883, or 8883 with
// TLS.
func ParseServerURI(uri string) (addr string, tls bool, err error) {
	hostPort := uri
	if strings.Contains(uri, "://") {
		u, err := url.Parse(uri)
		if err != nil {
			return "", false, fmt.Errorf("not a server URI: %w", err)
		}
		switch u.Scheme {
		case "tcp", "mqtt":
		case "ssl", "tls", "mqtts":
			tls = true
		default:
			return "", false, fmt.Errorf("scheme %q: give tcp://, mqtt://, ssl://, tls:// or mqtts://", u.Scheme)
		}
		if u.Path != "" && u.Path != "/" {
			return "", false, fmt.Errorf("%q: a server URI names a host and a port, not a path", uri)
		}
		hostPort = u.Host
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		// No port: a bracketed IPv6 address ("[::1]") loses its brackets.
		host, port = hostPort, "1883"
		if tls {
			port = "8883"
		}
		if inner, ok := strings.CutPrefix(host, "["); ok {
			host, _ = strings.CutSuffix(inner, "]")
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false, fmt.Errorf("%q: port %q is not a port number", uri, port)
	}
	if host == "" || strings.ContainsAny(host, "/ []") {
		return "", false, fmt.Errorf("%q names no host", uri)
	}
	return net.JoinHostPort(host, port), tls, nil
}
