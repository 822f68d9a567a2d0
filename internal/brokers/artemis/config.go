package artemis

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// settings are the driver's settings by section, with their defaults.
var settings = map[string]map[string]string{
	"common": {
		// The broker's AMQP 1.0 acceptor: amqp:// or amqps://; a
		// cluster's, one per node, separated by commas.
		"url": "amqp://127.0.0.1:61616",
		// OMB's Artemis driver file: the core protocol's URL
		// (tcp://host:port), whose acceptor Artemis also serves AMQP on
		// by default. Its host and port replace url's.
		"brokerAddress": "",
		// SASL PLAIN credentials; without a user the driver logs in
		// anonymously (SASL ANONYMOUS).
		"username": "", "password": "",
		// Where Artemis takes management requests (addresses, queues,
		// counters); empty: the broker has none (another AMQP 1.0
		// broker), topics and queues are left to it to create, and no
		// written count is read.
		"managementAddress": "activemq.management",
	},
	"topic": {},
	"producer": {
		// Messages the broker must persist before it settles them
		// (AMQP's header durable), as OMB's driver sends them.
		"durable": "true",
	},
	"consumer": {
		// Link credit: the messages the broker may send a consumer ahead
		// of its acceptances.
		"credit": "1000",
	},
}

// secretKeys are settings that never reach an output.
var secretKeys = []string{"password", "tlsTrustStorePassword", "tlsKeyStorePassword"}

// config is a validated driver configuration.
type config struct {
	// addrs are the acceptors' host:port, one per node of a cluster;
	// tls is nil for plain connections.
	addrs              []string
	tls                *tls.Config
	username, password string
	management         string
	durable            bool
	credit             int
	effective          map[string]workload.Properties
}

// parseConfig validates every setting of dc. endpoints, when given,
// replace the URL: amqp:// or amqps:// URLs, or host:port, one per node
// of a cluster. local are the credentials of a local broker brokerbench
// secured, used where dc gives none.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "Artemis", settings)
	c := &config{username: s.String("common", "username"), password: s.String("common", "password"),
		management: s.String("common", "managementAddress")}
	raw, key := s.String("common", "url"), "url"
	if ba := s.String("common", "brokerAddress"); ba != "" {
		raw, key = ba, "brokerAddress"
	}
	urls := strings.Split(raw, ",")
	if len(endpoints) > 0 {
		urls = endpoints
	}
	var secure bool
	for i, u := range urls {
		addr, tlsURL, user, err := parseURL(strings.TrimSpace(u))
		switch {
		case err != nil:
			s.Fail("common", key, "%v", err)
			continue
		case i > 0 && tlsURL != secure:
			s.Fail("common", key, "%q: every node of a cluster is reached alike, all over TLS (amqps://) or none", driver.RedactEndpoints(u))
		}
		secure = tlsURL
		c.addrs = append(c.addrs, addr)
		if user != nil && c.username == "" {
			c.username = user.Username()
			c.password, _ = user.Password()
		}
	}
	if local != nil && c.username == "" && c.password == "" {
		c.username, c.password = local.Username, local.Password
	}
	c.tls = driver.ClientTLS(s, secure, local)
	c.durable = s.Bool("producer", "durable")
	c.credit = s.Int("consumer", "credit", 1)
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective(append([]string{"url", "brokerAddress", "username"}, secretKeys...)...)
	scheme := "amqp"
	if c.tls != nil {
		scheme = "amqps"
	}
	nodes := make([]string, len(c.addrs))
	for i, a := range c.addrs {
		nodes[i] = scheme + "://" + a
	}
	common := append(workload.Properties{{Key: "url", Value: strings.Join(nodes, ",")}, {Key: "username", Value: c.username}}, c.effective["common"]...)
	if c.password != "" {
		common = append(common, workload.Property{Key: "password", Value: "(set)"})
	}
	c.effective["common"] = common.Effective()
	return c, nil
}

// parseURL reads a broker address: amqp://, amqps://, tcp:// (OMB's core
// protocol URL) or a bare host:port, the port 5672 (5671 over TLS) when
// a URL leaves it out. secure says the scheme asks for TLS; user is the
// URL's user information, if any.
func parseURL(raw string) (addr string, secure bool, user *url.Userinfo, err error) {
	if !strings.Contains(raw, "://") {
		if _, _, err := net.SplitHostPort(raw); err != nil {
			return "", false, nil, fmt.Errorf("%q is neither a URL (amqp://host:port) nor host:port", raw)
		}
		return raw, false, nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, nil, fmt.Errorf("%q: %w", driver.RedactEndpoints(raw), err)
	}
	port := "5672"
	switch u.Scheme {
	case "amqp", "tcp":
	case "amqps":
		secure, port = true, "5671"
	default:
		return "", false, nil, fmt.Errorf("%q: the scheme must be amqp://, amqps:// or tcp://", driver.RedactEndpoints(raw))
	}
	if u.Hostname() == "" {
		return "", false, nil, fmt.Errorf("%q names no host", driver.RedactEndpoints(raw))
	}
	if u.Port() != "" {
		port = u.Port()
	}
	addr = net.JoinHostPort(u.Hostname(), port)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", false, nil, fmt.Errorf("%q: %q is not a host name or address", driver.RedactEndpoints(raw), u.Hostname())
	}
	return addr, secure, u.User, nil
}
