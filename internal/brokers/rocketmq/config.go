package rocketmq

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// settings are the driver's settings by section, with their defaults.
// The common ones are those of OMB's RocketMQ 5 driver file, which gives
// them at its top level (see the module's OMBTopLevel).
var settings = map[string]map[string]string{
	"common": {
		// The proxy's gRPC endpoints, host:port, several separated by ';'.
		"grpcEndpoint": "127.0.0.1:8081",
		// The name servers, for administration (default: the first
		// proxy's host, port 9876), and the cluster whose brokers hold
		// the run's topics.
		"namesrvAddr": "", "clusterName": "DefaultCluster",
		// Delay messages: delivered delayTimeInSec after they were sent,
		// from topics of the DELAY message type.
		"sendDelayMsg": "false", "delayTimeInSec": "60",
		// Credentials of the gRPC clients and of the administration
		// requests (ACL); both keys empty: none.
		"accessKey": "", "secretKey": "", "adminAccessKey": "", "adminSecretKey": "",
		// How long a client waits for the proxy's answer to a call (a
		// send, an acknowledgement) before it fails it: a send that
		// fails so is attempted again (maxAttempts), and may then be
		// stored twice. The Java client's default.
		"requestTimeoutMs": "3000",
	},
	"topic": {},
	"producer": {
		"maxAttempts": "3", // the client's attempts per message, the Java client's default
		// Sends a producer has in calls to the proxy at once; a send
		// beyond waits for an answer, and the wait shows as send lag.
		// The proxy queues every call it gets: a call that waits there
		// longer than requestTimeoutMs fails, and is sent again.
		"maxInFlightRequests": "1000",
	},
	"consumer": {
		// A received message stays invisible to the group's other
		// consumers this long; unacknowledged by then, it is delivered
		// again. The proxy accepts 10 s to 12 h.
		"invisibleDurationMs": "30000",
		// Messages one receive call takes at most (the proxy's long
		// polling batch is 32).
		"receiveBatchSize": "32",
		// Receive calls a consumer has waiting for the proxy's answer at
		// once, each in a loop of its own. A loop receives a batch per
		// round trip: with 4, a consumer received 1,670 msg/s while a
		// producer sent 14,658 msg/s to the same proxy on 2 cores; with
		// 32, it kept up (docs/drivers/rocketmq.md).
		"maxInFlightReceives": "32",
	},
}

// maxReceives bounds maxInFlightReceives: each receive call is a loop
// and a long poll the proxy holds.
const maxReceives = 1024

// secretKeys are settings that never reach an output.
var secretKeys = []string{"secretKey", "adminSecretKey", "tlsTrustStorePassword", "tlsKeyStorePassword"}

// config is a validated driver configuration.
type config struct {
	grpcEndpoint string   // host:port;host:port
	namesrv      []string // host:port
	cluster      string
	delay        time.Duration // 0: normal messages
	accessKey    string
	secretKey    string
	adminKey     string
	adminSecret  string
	tls          *tls.Config // nil: plaintext gRPC
	maxAttempts  int
	maxRequests  int
	timeout      time.Duration
	invisible    time.Duration
	receiveBatch int
	receives     int // receive calls in flight per consumer
	effective    map[string]workload.Properties
}

// namesrvScheme marks an endpoint given on the command line as a name
// server's ("namesrv://host:9876"); others are the proxy's gRPC
// endpoints.
const namesrvScheme = "namesrv://"

// clusterScheme marks an endpoint that names the brokers' cluster
// ("cluster://DefaultCluster"): a local cluster's endpoints carry its
// name, which replaces clusterName as its addresses replace the
// config's (OMB's driver file gives a placeholder).
const clusterScheme = "cluster://"

// parseConfig validates every setting of dc. endpoints, when given,
// replace the addresses of the config: namesrv://host:port names a name
// server, cluster://NAME the brokers' cluster, host:port a proxy. local are the credentials of a local
// cluster brokerbench secured, used where dc gives none.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	if dc.DriverClass == ombV4DriverClass {
		return nil, fmt.Errorf("%w: %s: driverClass %s is OMB's RocketMQ 4 driver, whose producers and consumers talk to the brokers over the remoting protocol and batch in the client "+
			"(autoBatch, batchCQ, enableBackpressure): brokerbench's RocketMQ driver sends one message per call through a RocketMQ 5 proxy, where those settings mean nothing; "+
			"use OMB's driver-rocketmq5/rocketmq.yaml (driverClass %s), or a file with \"driver: rocketmq\"", workload.ErrInvalid, dc.Source, ombV4DriverClass, ombDriverClass)
	}
	s := driver.ParseSettings(dc, "RocketMQ", settings)
	c := &config{grpcEndpoint: s.String("common", "grpcEndpoint"), cluster: s.String("common", "clusterName")}
	namesrv := s.String("common", "namesrvAddr")
	var proxies, servers []string
	for _, e := range endpoints {
		if addr, ok := strings.CutPrefix(e, namesrvScheme); ok {
			servers = append(servers, addr)
		} else if name, ok := strings.CutPrefix(e, clusterScheme); ok {
			c.cluster = name
		} else {
			proxies = append(proxies, e)
		}
	}
	if len(proxies) > 0 {
		c.grpcEndpoint = strings.Join(proxies, ";")
	}
	if len(servers) > 0 {
		namesrv = strings.Join(servers, ";")
	}
	first, err := splitAddrs(c.grpcEndpoint)
	if err != nil {
		s.Fail("common", "grpcEndpoint", "%v", err)
	}
	if namesrv == "" && len(first) > 0 {
		host, _, _ := net.SplitHostPort(first[0])
		namesrv = net.JoinHostPort(host, "9876")
	}
	if c.namesrv, err = splitAddrs(namesrv); err != nil {
		s.Fail("common", "namesrvAddr", "%v", err)
	}
	if !validName(c.cluster) {
		s.Fail("common", "clusterName", "must be a RocketMQ name (letters, digits, '%%', '|', '-', '_'), got %q", c.cluster)
	}
	if s.Bool("common", "sendDelayMsg") {
		c.delay = time.Duration(s.Int("common", "delayTimeInSec", 1)) * time.Second
	}
	c.accessKey, c.secretKey = s.String("common", "accessKey"), s.String("common", "secretKey")
	c.adminKey, c.adminSecret = s.String("common", "adminAccessKey"), s.String("common", "adminSecretKey")
	c.tls = driver.ClientTLS(s, false, local)
	c.maxAttempts = s.Int("producer", "maxAttempts", 1)
	c.maxRequests = s.Int("producer", "maxInFlightRequests", 1)
	c.timeout = millis(s, "common", "requestTimeoutMs", 1, time.Hour)
	c.invisible = millis(s, "consumer", "invisibleDurationMs", 10000, 12*time.Hour)
	c.receiveBatch = s.Int("consumer", "receiveBatchSize", 1)
	if c.receiveBatch > 32 {
		s.Fail("consumer", "receiveBatchSize", "must be at most 32, the proxy's batch, got %d", c.receiveBatch)
	}
	c.receives = s.Int("consumer", "maxInFlightReceives", 1)
	if c.receives > maxReceives {
		s.Fail("consumer", "maxInFlightReceives", "must be at most %d, got %d", maxReceives, c.receives)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective(append(secretKeys, "grpcEndpoint", "namesrvAddr")...)
	c.effective["common"] = append(workload.Properties{
		{Key: "grpcEndpoint", Value: c.grpcEndpoint}, {Key: "namesrvAddr", Value: strings.Join(c.namesrv, ";")},
	}, c.effective["common"]...)
	return c, nil
}

// millis returns a setting in milliseconds, from lo to hi, recording an
// error located where it was set if it is outside (a duration of more
// than hi would overflow or mean nothing to the proxy).
func millis(s *driver.Settings, section, key string, lo int, hi time.Duration) time.Duration {
	ms := s.Int(section, key, lo)
	if ms > int(hi.Milliseconds()) {
		s.Fail(section, key, "must be at most %d (%s), got %d", hi.Milliseconds(), hi, ms)
		return hi
	}
	return time.Duration(ms) * time.Millisecond
}

// splitAddrs splits ';'-separated host:port addresses, as RocketMQ's
// clients take them.
func splitAddrs(s string) ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(s, ";") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || !validPort(port) {
			return nil, fmt.Errorf("must be host:port addresses separated by ';', got %q", s)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("must be host:port addresses separated by ';', got %q", s)
	}
	return addrs, nil
}

// validPort says whether s is a TCP port number.
func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 65536
}

// validName says whether RocketMQ accepts s as a topic, group or
// cluster name: up to 127 letters, digits, '%', '|', '-' and '_'.
func validName(s string) bool {
	if s == "" || len(s) > 127 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("%|-_", r):
		default:
			return false
		}
	}
	return true
}
