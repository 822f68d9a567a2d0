package pulsar

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// settings are the driver's settings by section, with their defaults.
// The names are those of OMB's Pulsar driver file (its client, producer
// and consumer sections), nested keys joined with dots; where OMB's
// driver fixes a value in code, its default here is that value.
var settings = map[string]map[string]string{
	"common": {
		"serviceUrl": "pulsar://127.0.0.1:6650", // binary protocol: pulsar:// or pulsar+ssl://
		"httpUrl":    "",                        // admin REST API: http:// or https:// (default: the service URL's host, port 8080 or 8443)
		// The namespace (tenant/namespace) of the run's topics, created
		// when missing. OMB adds a random suffix per driver; brokerbench
		// does not, so that every driver of a run finds the same topics.
		"namespacePrefix": "public/brokerbench",
		"clusterName":     "", // cluster a new tenant is allowed on (default: every cluster the broker knows)
		"topicType":       "persistent",
		// Namespace persistence policy (default: the replication factor
		// for ensemble and write quorum, a majority of it for the ack
		// quorum) and broker-side deduplication (effectively once).
		"persistence.ensembleSize": "", "persistence.writeQuorum": "", "persistence.ackQuorum": "",
		"persistence.deduplicationEnabled": "false",
		"connectionsPerBroker":             "8",
		"clientMemoryLimitMB":              "256",
		// Java client thread pools: the Go client has none to size.
		"ioThreads": "", "maxConcurrentLookupRequests": "",
		// OMB's TLS names, aliases of the common TLS settings: they
		// count only where set.
		"tlsTrustCertsFilePath": "", "tlsAllowInsecureConnection": "", "tlsEnableHostnameVerification": "",
		// Authentication plugin (token, basic, tls, oauth2, or the Java
		// class names of these) and its parameters.
		"authentication.plugin": "", "authentication.data": "",
	},
	"topic": {},
	"producer": {
		"batchingEnabled":           "true",
		"batchingMaxPublishDelayMs": "1",
		"batchingMaxBytes":          "1048576",
		"batchingMaxMessages":       strconv.Itoa(math.MaxInt32), // OMB's driver: no count limit
		"blockIfQueueFull":          "true",
		"pendingQueueSize":          "0", // per partition; 0 or less than the run's in-flight bound: that bound
		"sendTimeoutMs":             "0", // 0: none, as OMB's driver sets
		"compressionType":           "NONE",
	},
	"consumer": {
		"subscriptionType":  "Failover",
		"receiverQueueSize": "10000",
	},
}

// secretKeys are settings that never reach an output.
var secretKeys = []string{"authentication.data", "tlsTrustStorePassword", "tlsKeyStorePassword"}

// config is a validated driver configuration.
type config struct {
	serviceURL, httpURL  string
	spareHTTPURLs        []string // the other brokers' admin APIs, which reads fall back on when httpURL does not answer
	tenant, namespace    string
	clusters             []string // allowed clusters of a tenant the driver creates; nil: the broker's
	persistence          persistence
	dedup                bool
	connectionsPerBroker int
	memoryLimit          int64
	tls                  *tls.Config // nil: plain connections
	authPlugin, authData string

	batching                        bool
	batchDelay                      time.Duration
	batchMaxBytes, batchMaxMessages uint
	blockIfQueueFull                bool
	pendingQueueSize                int
	sendTimeout                     time.Duration
	compression                     pulsar.CompressionType
	subscriptionType                pulsar.SubscriptionType
	receiverQueueSize               int
	effective                       map[string]workload.Properties
}

// persistence is a namespace's persistence policy: how many bookies
// store each ledger, write each entry and acknowledge it.
type persistence struct{ ensemble, write, ack int }

// persistenceFor returns the policy of a replication factor: rf bookies
// store and write each entry, a majority acknowledges it (OMB's 3/3/2).
func persistenceFor(rf int) persistence {
	return persistence{ensemble: rf, write: rf, ack: rf/2 + 1}
}

// subscriptionTypes are the subscription types by their Java names, as
// OMB's file gives them, and the Go client's.
var subscriptionTypes = map[string]pulsar.SubscriptionType{
	"exclusive": pulsar.Exclusive, "shared": pulsar.Shared, "failover": pulsar.Failover,
	"key_shared": pulsar.KeyShared, "keyshared": pulsar.KeyShared,
}

var compressionTypes = map[string]pulsar.CompressionType{
	"none": pulsar.NoCompression, "lz4": pulsar.LZ4, "zlib": pulsar.ZLib, "zstd": pulsar.ZSTD,
}

// parseConfig validates every setting of dc. endpoints, when given,
// replace the service and admin URLs: pulsar:// or pulsar+ssl:// URLs
// and host:port name the service (several: one service URL of their
// hosts, the first one's scheme), http:// or https:// URLs the admin API
// (the first; the others are spares). local are the credentials of a local cluster brokerbench
// secured, used where dc gives none.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(withAliases(dc), "Pulsar", settings)
	c := &config{serviceURL: s.String("common", "serviceUrl"), httpURL: s.String("common", "httpUrl")}
	var service, admin []string
	for _, e := range endpoints {
		switch {
		case strings.HasPrefix(e, "http://"), strings.HasPrefix(e, "https://"):
			admin = append(admin, e)
		case strings.Contains(e, "://"):
			service = append(service, e)
		default:
			service = append(service, "pulsar://"+e)
		}
	}
	for i, e := range service {
		if i == 0 {
			c.serviceURL = e
		} else {
			_, hosts, _ := strings.Cut(e, "://")
			c.serviceURL += "," + hosts
		}
	}
	if len(admin) > 0 {
		c.httpURL, c.spareHTTPURLs = admin[0], admin[1:]
	}
	secure := strings.HasPrefix(c.serviceURL, "pulsar+ssl://")
	if !secure && !strings.HasPrefix(c.serviceURL, "pulsar://") {
		s.Fail("common", "serviceUrl", "must be a pulsar:// or pulsar+ssl:// URL, got %q", c.serviceURL)
	}
	if c.httpURL == "" {
		if urls, err := adminURLsOf(c.serviceURL); err != nil {
			s.Fail("common", "serviceUrl", "%v", err)
		} else {
			c.httpURL, c.spareHTTPURLs = urls[0], urls[1:]
		}
	} else if u, err := url.Parse(c.httpURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		s.Fail("common", "httpUrl", "must be an http:// or https:// URL, got %q", c.httpURL)
	}
	ns := s.String("common", "namespacePrefix")
	var err error
	if c.tenant, c.namespace, err = splitNamespace(ns); err != nil {
		s.Fail("common", "namespacePrefix", "%v", err)
	}
	if cl := s.String("common", "clusterName"); cl != "" {
		c.clusters = []string{cl}
	}
	if t := s.String("common", "topicType"); t != "persistent" {
		s.Fail("common", "topicType", "must be persistent, got %q: non-persistent topics keep nothing to count, replay or read again", t)
	}
	c.persistence = persistenceFor(dc.ReplicationFactor)
	for _, q := range []struct {
		key string
		dst *int
	}{{"persistence.ensembleSize", &c.persistence.ensemble}, {"persistence.writeQuorum", &c.persistence.write}, {"persistence.ackQuorum", &c.persistence.ack}} {
		if s.String("common", q.key) != "" {
			*q.dst = s.Int("common", q.key, 1)
		}
	}
	if p := c.persistence; p.ack > p.write || p.write > p.ensemble {
		s.Fail("common", "persistence.ackQuorum", "must hold ackQuorum <= writeQuorum <= ensembleSize, got %d, %d, %d", p.ack, p.write, p.ensemble)
	}
	c.dedup = s.Bool("common", "persistence.deduplicationEnabled")
	c.connectionsPerBroker = s.Int("common", "connectionsPerBroker", 1)
	c.memoryLimit = int64(s.Int("common", "clientMemoryLimitMB", 1)) << 20
	for _, k := range []string{"ioThreads", "maxConcurrentLookupRequests"} {
		if s.String("common", k) != "" {
			s.Int("common", k, 1)
		}
	}
	c.tls = clientTLS(s, secure || strings.HasPrefix(c.httpURL, "https://"), local)
	c.authPlugin, c.authData = s.String("common", "authentication.plugin"), s.String("common", "authentication.data")
	if c.authPlugin == "" && local != nil && local.Username != "" {
		// A local cluster brokerbench secured checks tokens signed
		// with a key of its password (see tokenKey).
		var err error
		if c.authPlugin, c.authData, err = localTokenAuth(local.Username, local.Password); err != nil {
			s.Fail("common", "authentication.plugin", "a token for the local cluster: %v", err)
		}
	}
	if c.authPlugin != "" {
		var err error
		if c.authData, err = authParams(c.authPlugin, c.authData); err == nil {
			_, err = pulsar.NewAuthentication(c.authPlugin, c.authData)
		}
		if err != nil {
			s.Fail("common", "authentication.plugin", "%v (authentication.data in the Java client's form: token:TOKEN or file:PATH, {\"userId\":...,\"password\":...}, tlsCertFile:PATH,tlsKeyFile:PATH, or JSON)", err)
		}
	}

	c.batching = s.Bool("producer", "batchingEnabled")
	c.batchDelay = time.Duration(s.Int("producer", "batchingMaxPublishDelayMs", 0)) * time.Millisecond
	c.batchMaxBytes = uint(s.Int("producer", "batchingMaxBytes", 1))
	c.batchMaxMessages = uint(s.Int("producer", "batchingMaxMessages", 1))
	c.blockIfQueueFull = s.Bool("producer", "blockIfQueueFull")
	c.pendingQueueSize = s.Int("producer", "pendingQueueSize", 0)
	c.sendTimeout = time.Duration(s.Int("producer", "sendTimeoutMs", 0)) * time.Millisecond // 0: none
	ct, ok := compressionTypes[strings.ToLower(s.String("producer", "compressionType"))]
	if !ok {
		s.Fail("producer", "compressionType", "must be NONE, LZ4, ZLIB or ZSTD, got %q", s.String("producer", "compressionType"))
	}
	c.compression = ct
	st, ok := subscriptionTypes[strings.ToLower(s.String("consumer", "subscriptionType"))]
	if !ok {
		s.Fail("consumer", "subscriptionType", "must be Exclusive, Shared, Failover or Key_Shared, got %q", s.String("consumer", "subscriptionType"))
	}
	c.subscriptionType = st
	c.receiverQueueSize = s.Int("consumer", "receiverQueueSize", 1)
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective(append(secretKeys, "serviceUrl", "httpUrl", "tlsTrustCertsFilePath", "tlsAllowInsecureConnection", "tlsEnableHostnameVerification")...)
	c.effective["common"] = append(workload.Properties{
		{Key: "httpUrl", Value: driver.RedactEndpoints(c.httpURL)}, {Key: "serviceUrl", Value: driver.RedactEndpoints(c.serviceURL)},
	}, c.effective["common"]...)
	if c.authData != "" {
		c.effective["common"] = append(c.effective["common"], workload.Property{Key: "authentication.data", Value: "(set)"})
	}
	return c, nil
}

// authParams returns the parameters of an authentication plugin in the
// Go client's form (a JSON object) from the Java client's, which OMB's
// files give: "token:TOKEN" or "file:PATH" for tokens, "KEY:VALUE,..."
// for TLS, a JSON object whose "userId" is the Go client's "username"
// for basic authentication. A JSON object is taken as it is.
func authParams(plugin, data string) (string, error) {
	data = strings.TrimSpace(data)
	m := map[string]string{}
	switch {
	case data == "":
		return "{}", nil
	case strings.HasPrefix(data, "{"):
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return "", fmt.Errorf("authentication.data: %w", err)
		}
		if u, ok := m["userId"]; ok && m["username"] == "" {
			m["username"] = u
			delete(m, "userId")
		}
	case strings.HasSuffix(strings.ToLower(plugin), "token"):
		kind, v, ok := strings.Cut(data, ":")
		if !ok || (kind != "token" && kind != "file") {
			kind, v = "token", data // a bare token
		}
		m[kind] = strings.TrimPrefix(v, "//") // file:///path names /path
	default:
		for _, kv := range strings.Split(data, ",") {
			k, v, ok := strings.Cut(kv, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return "", fmt.Errorf("authentication.data: %q is not KEY:VALUE", kv)
			}
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// adminURLsOf returns the admin API's URL on each host of serviceURL:
// port 8080 over http, 8443 over https for pulsar+ssl://.
func adminURLsOf(serviceURL string) ([]string, error) {
	scheme, hosts, _ := strings.Cut(serviceURL, "://")
	adminScheme, port := "http", "8080"
	if scheme == "pulsar+ssl" {
		adminScheme, port = "https", "8443"
	}
	var urls []string
	for _, h := range strings.Split(hosts, ",") {
		u, err := url.Parse(scheme + "://" + h)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("cannot tell the admin API's host from %q: give httpUrl", serviceURL)
		}
		urls = append(urls, adminScheme+"://"+net.JoinHostPort(u.Hostname(), port))
	}
	return urls, nil
}

// splitNamespace splits "tenant/namespace", each part a name Pulsar
// accepts (letters, digits, '-', '_', '.', '=', ':').
func splitNamespace(ns string) (tenant, namespace string, err error) {
	tenant, namespace, ok := strings.Cut(ns, "/")
	if !ok || !validName(tenant) || !validName(namespace) {
		return "", "", fmt.Errorf("must be tenant/namespace (letters, digits, '-', '_', '.', '=', ':'), got %q", ns)
	}
	return tenant, namespace, nil
}

// validName says whether Pulsar accepts s as a tenant, namespace or
// topic name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.=:", r):
		default:
			return false
		}
	}
	return true
}

// tlsAliases are OMB's TLS settings and the common TLS settings they
// stand for.
var tlsAliases = map[string]string{"tlsTrustCertsFilePath": "tlsTrustStore", "tlsEnableHostnameVerification": "tlsVerifyHostname"}

// withAliases returns dc with every OMB TLS alias it sets also set under
// the common name, where it was set, unless the common name is set too.
func withAliases(dc *workload.DriverConfig) *workload.DriverConfig {
	out := *dc
	out.Common = append(workload.Properties(nil), dc.Common...)
	for alias, name := range tlsAliases {
		v, ok := dc.Common.Get(alias)
		if _, set := dc.Common.Get(name); ok && v != "" && !set {
			p := dc.Common.Map()[alias]
			p.Key = name
			out.Common = append(out.Common, p)
		}
	}
	return &out
}

// clientTLS returns the TLS config of the common TLS settings, or nil
// when TLS is off; OMB's tlsAllowInsecureConnection turns every check of
// the server's certificate off.
func clientTLS(s *driver.Settings, byScheme bool, local *driver.Credentials) *tls.Config {
	cfg := driver.ClientTLS(s, byScheme, local)
	if s.String("common", "tlsAllowInsecureConnection") != "" && s.Bool("common", "tlsAllowInsecureConnection") && cfg != nil {
		cfg.InsecureSkipVerify, cfg.VerifyConnection = true, nil
	}
	return cfg
}
