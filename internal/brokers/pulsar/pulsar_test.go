package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the Pulsar standalone node the tests start, secured (a token
// asked for on every listener, and a TLS one), on ports of their own,
// when the first test that needs it asks.
var server = testbroker.NewLazyLocalWith("pulsar", 29650, func(c *local.Cluster) { c.Listeners = []string{"plain", "tls"} })

func TestMain(m *testing.M) { server.Main(m) }

// connect returns a driver of the test broker's plain listener with the
// common settings given, and the broker's credentials; the caller closes
// it.
func connect(t *testing.T, common workload.Properties) driver.Driver {
	t.Helper()
	d, err := connectListener(t, "plain", common, true)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// connectListener returns a driver of the test broker's listener with
// the common settings given, and with the broker's credentials if creds
// (else trusting its authority alone).
func connectListener(t *testing.T, listener string, common workload.Properties, creds bool) (driver.Driver, error) {
	t.Helper()
	c := server.Get(t).Cluster
	sec := c.Security()
	cr := &driver.Credentials{CAFile: sec.CAFile}
	if creds {
		pw, err := sec.Password()
		if err != nil {
			t.Fatal(err)
		}
		cr.Username, cr.Password = sec.Username, pw
	}
	return New(&workload.DriverConfig{Name: "pulsar", Source: "test", ReplicationFactor: 1, Common: common},
		driver.Options{Endpoints: LocalKind.Endpoints(c.Status(), listener), Credentials: cr})
}

// TestSecurity: the broker's TLS listener serves the binary protocol and
// the admin API to a client trusting its authority with its token; a
// client without a token, or with a token the broker did not sign, is
// refused on either listener, and told which settings to check.
func TestSecurity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := connectListener(t, "tls", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if cfg := d.(*Driver).cfg; !strings.HasPrefix(cfg.serviceURL, "pulsar+ssl://") || !strings.HasPrefix(cfg.httpURL, "https://") {
		t.Fatalf("the tls listener's endpoints: %s and %s; want pulsar+ssl:// and https://", cfg.serviceURL, cfg.httpURL)
	}
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "Apache Pulsar ") {
		t.Errorf("over TLS: BrokerVersion = %q, %v", v, err)
	}
	topic := "bb-tls-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	defer d.DeleteTopic(ctx, topic)
	produce(ctx, t, d, topic, 10)

	wrongToken, err := localToken(local.Username, "not the cluster's password")
	if err != nil {
		t.Fatal(err)
	}
	// Each case waits out the client's operation timeout (30 s) before
	// the producer fails: they run together, in a group the topic
	// outlives.
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			name, listener string
			common         workload.Properties
		}{
			{"no token, plain", "plain", nil},
			{"no token, tls", "tls", nil},
			{"a token of another key, tls", "tls", workload.Properties{{Key: "authentication.plugin", Value: "token"}, {Key: "authentication.data", Value: "token:" + wrongToken}}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				d, err := connectListener(t, c.listener, c.common, false)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if _, err := d.BrokerVersion(ctx); !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "authentication.plugin") {
					t.Errorf("BrokerVersion: %v; want a refusal naming authentication.plugin", err)
				}
				p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: 1}, func(*driver.Message, error) {})
				if err == nil {
					p.Close()
				}
				if !errors.Is(err, driver.ErrRefused) || !strings.Contains(err.Error(), "authentication.plugin") {
					t.Errorf("NewProducer: %v; want a refusal naming authentication.plugin", err)
				}
			})
		}
	})
}

// target is the conformance suite's target: the test broker with the
// common settings given.
func target(common workload.Properties) drivertest.Target {
	return drivertest.Target{
		Connect: func(t *testing.T) driver.Driver { return connect(t, common) },
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "pulsar", Source: "test", ReplicationFactor: 1}, driver.Options{Endpoints: []string{"pulsar://127.0.0.1:1", "http://127.0.0.1:1"}})
		},
	}
}

// TestConformance: the driver passes the conformance suite against a
// local standalone node, with OMB's pulsar.yaml settings.
func TestConformance(t *testing.T) { brokertest.Run(t, "pulsar", target(nil)) }

// TestConformanceDeduplication: so it does with broker-side
// deduplication on (OMB's pulsar-effectively-once.yaml), in a namespace
// of its own, where the driver gives no written count (see New): the
// driver checks, with the module's capabilities but that one.
func TestConformanceDeduplication(t *testing.T) {
	tg := target(workload.Properties{
		{Key: "namespacePrefix", Value: "public/brokerbench-dedup"},
		{Key: "persistence.deduplicationEnabled", Value: "true"},
	})
	m, _ := brokers.Lookup("pulsar")
	tg.Capabilities = m.Capabilities
	tg.Capabilities.Written = false
	drivertest.Run(t, tg)
}

// TestBrokerVersion: the admin API names the broker's release.
func TestBrokerVersion(t *testing.T) {
	d := connect(t, nil)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "Apache Pulsar ") {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
}

// TestCheck: a run's messages must fit the broker's maxMessageSize
// (5 MiB by default), its existing topics must exist, its ensembles
// must fit the cluster's bookies, and a tenant it creates must be
// allowed on a cluster the broker knows.
func TestCheck(t *testing.T) {
	d := connect(t, nil)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := "bb-check-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	defer d.DeleteTopic(ctx, topic)
	c := d.(driver.Checker)
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 1024, ExistingTopics: []string{topic}}); err != nil {
		t.Errorf("a topic that exists, 1 KiB messages: %v", err)
	}
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 6 << 20}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "maxMessageSize") {
		t.Errorf("6 MiB messages: %v; want an input error naming maxMessageSize", err)
	}
	if err := c.Check(ctx, driver.CheckSpec{MessageSize: 100, ExistingTopics: []string{topic + "-missing"}}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing topic: %v; want an input error", err)
	}
	// OMB's cluster name "local", for a tenant to create on a node whose
	// cluster is "standalone".
	local := connect(t, workload.Properties{{Key: "clusterName", Value: "local"}, {Key: "namespacePrefix", Value: "bb-omb/ns"}})
	defer local.Close()
	if err := local.(driver.Checker).Check(ctx, driver.CheckSpec{MessageSize: 100}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), `clusterName "local"`) {
		t.Errorf("a tenant to create on cluster local: %v; want an input error naming clusterName", err)
	}
	// OMB's ensembles of 3 bookies, on a node with one.
	omb := connect(t, workload.Properties{{Key: "persistence.ensembleSize", Value: "3"}})
	defer omb.Close()
	if err := omb.(driver.Checker).Check(ctx, driver.CheckSpec{MessageSize: 100}); !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "persistence.ensembleSize") {
		t.Errorf("ensembles of 3 bookies on a node with 1: %v; want an input error naming persistence.ensembleSize", err)
	}
}

// props returns properties set in file f at consecutive lines.
func props(f string, kv ...string) workload.Properties {
	var p workload.Properties
	for i := 0; i+1 < len(kv); i += 2 {
		p = append(p, workload.Property{Key: kv[i], Value: kv[i+1], File: f, Line: i/2 + 1})
	}
	return p
}

// ombDriver returns the config of a copy of one of OMB's Pulsar driver
// files (driver-pulsar/NAME), as OMB ships it.
func ombDriver(t *testing.T, name string) *workload.DriverConfig {
	t.Helper()
	dc, err := workload.LoadDriver(filepath.Join("..", "..", "workload", "testdata", "omb-"+strings.TrimSuffix(name, ".yaml")+"-driver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// TestOMBSettings: OMB's Pulsar settings map onto the Go client's
// options as OMB's driver maps them onto the Java client's.
func TestOMBSettings(t *testing.T) {
	spec := driver.ProducerSpec{Topic: "t", MaxMessageBytes: 1024, MaxInFlight: 5000}
	cases := []struct {
		name               string
		file               string // OMB's driver file whose settings come first
		common, prod, cons workload.Properties
		rf                 int
		check              func(t *testing.T, c *config, po pulsar.ProducerOptions, co pulsar.ConsumerOptions)
	}{{
		// pulsar.yaml as OMB ships it.
		name: "pulsar.yaml", file: "pulsar.yaml", rf: 1,
		check: func(t *testing.T, c *config, po pulsar.ProducerOptions, co pulsar.ConsumerOptions) {
			if c.serviceURL != "pulsar://localhost:6650" || c.httpURL != "http://localhost:8080" || c.tenant != "benchmark" || c.namespace != "ns" {
				t.Errorf("addresses and namespace: %s %s %s/%s", c.serviceURL, c.httpURL, c.tenant, c.namespace)
			}
			if c.persistence != (persistence{3, 3, 2}) || c.dedup || c.connectionsPerBroker != 8 || c.clusters[0] != "local" || c.tls != nil {
				t.Errorf("client settings: %+v", c)
			}
			if po.DisableBatching || po.BatchingMaxPublishDelay != time.Millisecond || po.BatchingMaxSize != 131072 ||
				po.BatchingMaxMessages != math.MaxInt32 || po.DisableBlockIfQueueFull || po.SendTimeout >= 0 || c.sendTimeout != 0 {
				t.Errorf("producer options: %+v", po)
			}
			// pendingQueueSize 0: the runner's in-flight bound.
			if po.MaxPendingMessages != 5000 {
				t.Errorf("MaxPendingMessages = %d, want the in-flight bound 5000", po.MaxPendingMessages)
			}
			if co.Type != pulsar.Failover || co.ReceiverQueueSize != 10000 || co.SubscriptionInitialPosition != pulsar.SubscriptionPositionEarliest {
				t.Errorf("consumer options: %+v", co)
			}
		},
	}, {
		// pulsar-effectively-once.yaml: deduplication on, no batchingMaxBytes (OMB's default 1 MiB).
		name: "pulsar-effectively-once.yaml", file: "pulsar-effectively-once.yaml", rf: 1,
		check: func(t *testing.T, c *config, po pulsar.ProducerOptions, co pulsar.ConsumerOptions) {
			if !c.dedup || po.BatchingMaxSize != 1<<20 || co.ReceiverQueueSize != 10000 || co.Type != pulsar.Failover {
				t.Errorf("dedup %v, batch bytes %d, receiver queue %d, type %v", c.dedup, po.BatchingMaxSize, co.ReceiverQueueSize, co.Type)
			}
		},
	}, {
		// No persistence settings: the workload's replication factor, a majority acknowledging.
		name: "replication factor 3", rf: 3,
		check: func(t *testing.T, c *config, _ pulsar.ProducerOptions, _ pulsar.ConsumerOptions) {
			if c.persistence != (persistence{3, 3, 2}) || c.serviceURL != "pulsar://127.0.0.1:6650" || c.httpURL != "http://127.0.0.1:8080" {
				t.Errorf("persistence %+v, %s %s", c.persistence, c.serviceURL, c.httpURL)
			}
		},
	}, {
		// Each Java subscription type name, in any case.
		name: "Key_Shared", cons: props("c.yaml", "subscriptionType", "Key_Shared"), rf: 1,
		check: func(t *testing.T, _ *config, _ pulsar.ProducerOptions, co pulsar.ConsumerOptions) {
			if co.Type != pulsar.KeyShared || ordered(co.Type) {
				t.Errorf("type %v, ordered %v", co.Type, ordered(co.Type))
			}
		},
	}, {
		name: "Shared", cons: props("c.yaml", "subscriptionType", "shared"), rf: 1,
		check: func(t *testing.T, _ *config, _ pulsar.ProducerOptions, co pulsar.ConsumerOptions) {
			if co.Type != pulsar.Shared || ordered(co.Type) {
				t.Errorf("type %v", co.Type)
			}
		},
	}, {
		name: "Exclusive", cons: props("c.yaml", "subscriptionType", "Exclusive"), rf: 1,
		check: func(t *testing.T, _ *config, _ pulsar.ProducerOptions, co pulsar.ConsumerOptions) {
			if co.Type != pulsar.Exclusive || !ordered(co.Type) {
				t.Errorf("type %v", co.Type)
			}
		},
	}, {
		// Batching off, a queue larger than the in-flight bound, a send timeout, compression.
		name: "producer settings", rf: 1,
		prod: props("p.yaml", "batchingEnabled", "false", "pendingQueueSize", "20000", "sendTimeoutMs", "30000", "compressionType", "LZ4", "blockIfQueueFull", "false"),
		check: func(t *testing.T, c *config, po pulsar.ProducerOptions, _ pulsar.ConsumerOptions) {
			// The producer times sends out itself, never the client.
			if !po.DisableBatching || po.MaxPendingMessages != 20000 || c.sendTimeout != 30*time.Second || po.SendTimeout >= 0 || po.CompressionType != pulsar.LZ4 || !po.DisableBlockIfQueueFull {
				t.Errorf("producer options: %+v", po)
			}
		},
	}, {
		// A pulsar+ssl:// service: TLS on, the admin API over https on 8443; OMB's aliases set the TLS checks.
		name: "TLS", rf: 1, common: props("t.yaml", "serviceUrl", "pulsar+ssl://broker:6651", "tlsAllowInsecureConnection", "true"),
		check: func(t *testing.T, c *config, _ pulsar.ProducerOptions, _ pulsar.ConsumerOptions) {
			if c.tls == nil || !c.tls.InsecureSkipVerify || c.httpURL != "https://broker:8443" {
				t.Errorf("tls %+v, admin %s", c.tls, c.httpURL)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dc := &workload.DriverConfig{Name: "pulsar", Source: "d.yaml"}
			if tc.file != "" {
				dc = ombDriver(t, tc.file)
			}
			dc.ReplicationFactor = tc.rf
			dc.Common, dc.Producer, dc.Consumer = append(dc.Common, tc.common...), append(dc.Producer, tc.prod...), append(dc.Consumer, tc.cons...)
			if _, err := New(dc, driver.Options{}); err != nil {
				t.Fatalf("the driver refuses the config: %v", err)
			}
			c, err := parseConfig(dc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c, producerOptions(c, spec), consumerOptions(c, "persistent://t/n/x", driver.ConsumerSpec{Topic: "x", Subscription: "s"}))
		})
	}
}

// TestSettingsRefused: wrong values are refused with the file and line
// they were set at, and what to give instead.
func TestSettingsRefused(t *testing.T) {
	cases := []struct {
		name               string
		common, prod, cons workload.Properties
		want               string
	}{
		// A misspelled setting, with a suggestion.
		{"unknown", nil, props("p.yaml", "batchingMaxBytse", "5"), nil, `p.yaml:1: field "batchingMaxBytse": unsupported Pulsar setting in producerConfig (did you mean "batchingMaxBytes"?)`},
		// Non-persistent topics keep nothing to count or read again.
		{"non-persistent", props("c.yaml", "topicType", "non-persistent"), nil, nil, "must be persistent"},
		{"subscription type", nil, nil, props("s.yaml", "subscriptionType", "Failsafe"), `s.yaml:1: field "consumerConfig subscriptionType": must be Exclusive, Shared, Failover or Key_Shared`},
		{"quorums", props("q.yaml", "persistence.ensembleSize", "2", "persistence.writeQuorum", "3"), nil, nil, "ackQuorum <= writeQuorum <= ensembleSize"},
		{"namespace", props("n.yaml", "namespacePrefix", "benchmark"), nil, nil, "must be tenant/namespace"},
		{"service URL", props("u.yaml", "serviceUrl", "http://broker:8080"), nil, nil, "must be a pulsar:// or pulsar+ssl:// URL"},
		{"admin URL", props("u.yaml", "httpUrl", "broker:8080"), nil, nil, "must be an http:// or https:// URL"},
		{"compression", nil, props("p.yaml", "compressionType", "SNAPPY"), nil, "must be NONE, LZ4, ZLIB or ZSTD"},
		{"not a number", nil, props("p.yaml", "batchingMaxPublishDelayMs", "1ms"), nil, `p.yaml:1: field "producerConfig batchingMaxPublishDelayMs": must be a whole number`},
		{"auth plugin", props("a.yaml", "authentication.plugin", "kerberos"), nil, nil, `a.yaml:1: field "commonConfig authentication.plugin": invalid auth provider 'kerberos'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(&workload.DriverConfig{Name: "pulsar", Source: "d.yaml", ReplicationFactor: 1, Common: tc.common, Producer: tc.prod, Consumer: tc.cons}, driver.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want it to contain %q", err, tc.want)
			}
			if err != nil && !errors.Is(err, workload.ErrInvalid) {
				t.Errorf("error %v does not wrap workload.ErrInvalid", err)
			}
		})
	}
}

// TestEndpoints: addresses given on the command line replace the
// config's, each kind by its scheme; the admin API is the first one
// given (or the first broker's), the other brokers' are its spares.
func TestEndpoints(t *testing.T) {
	cases := []struct {
		endpoints         []string
		service, adminURL string
		spares            []string
	}{
		{[]string{"broker:6650"}, "pulsar://broker:6650", "http://broker:8080", nil},
		{[]string{"pulsar://b:7000", "http://a:9000"}, "pulsar://b:7000", "http://a:9000", nil},
		{[]string{"pulsar+ssl://b:6651"}, "pulsar+ssl://b:6651", "https://b:8443", nil},
		// Several brokers: one service URL of them all; the admin API on each.
		{[]string{"b1:6650", "b2:6650"}, "pulsar://b1:6650,b2:6650", "http://b1:8080", []string{"http://b2:8080"}},
		{[]string{"pulsar://b1:6650", "pulsar://b2:6650", "http://b1:8080", "http://b2:8080"}, "pulsar://b1:6650,b2:6650", "http://b1:8080", []string{"http://b2:8080"}},
	}
	for _, tc := range cases {
		c, err := parseConfig(&workload.DriverConfig{Name: "pulsar", Source: "d.yaml", ReplicationFactor: 1}, tc.endpoints, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.serviceURL != tc.service || c.httpURL != tc.adminURL || !slices.Equal(c.spareHTTPURLs, tc.spares) {
			t.Errorf("%v: service %s, admin %s, spares %v; want %s, %s, %v", tc.endpoints, c.serviceURL, c.httpURL, c.spareHTTPURLs, tc.service, tc.adminURL, tc.spares)
		}
	}
}

// TestEffectiveConfigHidesSecrets: the authentication data never reaches
// the results.
func TestEffectiveConfigHidesSecrets(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "pulsar", Source: "d.yaml", ReplicationFactor: 1,
		Common: props("d.yaml", "authentication.plugin", "token", "authentication.data", "token:s3cret")}, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for section, ps := range d.EffectiveConfig() {
		for _, p := range ps {
			if strings.Contains(p.Value, "s3cret") {
				t.Errorf("%s %s shows the token", section, p.Key)
			}
		}
	}
}

// TestAuthParams: authentication data in the Java client's forms, as
// OMB's files give it, becomes the Go client's JSON parameters.
func TestAuthParams(t *testing.T) {
	cases := []struct{ plugin, data, want string }{
		{"token", "token:abc", `{"token":"abc"}`},
		{"org.apache.pulsar.client.impl.auth.AuthenticationToken", "file:///run/token", `{"file":"/run/token"}`},
		{"token", "abc", `{"token":"abc"}`}, // a bare token
		{"basic", `{"userId":"u","password":"p"}`, `{"password":"p","username":"u"}`},
		{"tls", "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", `{"tlsCertFile":"/c.pem","tlsKeyFile":"/k.pem"}`},
		{"oauth2", `{"issuerUrl":"https://i","audience":"a"}`, `{"audience":"a","issuerUrl":"https://i"}`},
		{"token", "", "{}"},
	}
	for _, tc := range cases {
		if got, err := authParams(tc.plugin, tc.data); err != nil || got != tc.want {
			t.Errorf("authParams(%q, %q) = %s, %v; want %s", tc.plugin, tc.data, got, err, tc.want)
		}
	}
	// Sad paths: data that is neither JSON nor KEY:VALUE pairs.
	for _, data := range []string{`{"userId":`, "tlsCertFile", ",:x"} {
		if got, err := authParams("tls", data); err == nil {
			t.Errorf("authParams(tls, %q) = %s; want an error", data, got)
		}
	}
}

// FuzzAuthParams: any authentication data gives JSON parameters or an
// error.
func FuzzAuthParams(f *testing.F) {
	f.Add("token", "token:abc")
	f.Add("basic", `{"userId":"u","password":"p"}`)
	f.Add("tls", "tlsCertFile:/c,tlsKeyFile:/k")
	f.Fuzz(func(t *testing.T, plugin, data string) {
		got, err := authParams(plugin, data)
		if err == nil && got != "" && !json.Valid([]byte(got)) {
			t.Errorf("authParams(%q, %q) = %q, not JSON", plugin, data, got)
		}
	})
}

// TestNoWrittenCountWithDeduplication: with deduplication on, the
// message-in counter also counts the resends the broker dropped, so the
// driver gives no count rather than a wrong one (checked against a
// broker: 5 messages, then 2 of them resent and 1 new, count 8, 6 stored);
// it still reads the broker again.
func TestNoWrittenCountWithDeduplication(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "pulsar", Source: "d.yaml", ReplicationFactor: 1,
		Common: props("d.yaml", "persistence.deduplicationEnabled", "true")}, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, counts := d.(driver.WrittenCounter); counts {
		t.Error("the driver counts written messages with deduplication on")
	}
	if _, rereads := d.(driver.Rereader); !rereads {
		t.Error("the driver does not read the broker again with deduplication on")
	}
}

// FuzzParseStats: topic stats from any answer decode or fail; they never
// give a negative count.
func FuzzParseStats(f *testing.F) {
	f.Add([]byte(`{"msgInCounter":3500,"msgOutCounter":0,"partitions":{}}`))
	f.Add([]byte(`{"msgInCounter":-1}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseStats(data)
		if err == nil && s.MsgInCounter < 0 {
			t.Errorf("negative count %d accepted", s.MsgInCounter)
		}
	})
}

// FuzzParseConfig: any values of the settings are accepted or refused
// with an input error, never a panic; what is accepted is consistent.
func FuzzParseConfig(f *testing.F) {
	f.Add("pulsar://localhost:6650", "benchmark/ns", "3", "2", "Failover", "1", "0")
	f.Add("pulsar+ssl://h:1", "a/b", "", "", "key_shared", "0", "-5")
	f.Add("::", "/", "x", "9", "", "", "")
	f.Fuzz(func(t *testing.T, serviceURL, ns, write, ack, subType, delay, pending string) {
		dc := &workload.DriverConfig{Name: "pulsar", Source: "f.yaml", ReplicationFactor: 1,
			Common:   props("f.yaml", "serviceUrl", serviceURL, "namespacePrefix", ns, "persistence.writeQuorum", write, "persistence.ackQuorum", ack),
			Producer: props("f.yaml", "batchingMaxPublishDelayMs", delay, "pendingQueueSize", pending), Consumer: props("f.yaml", "subscriptionType", subType)}
		c, err := parseConfig(dc, nil, nil)
		if err != nil {
			if !errors.Is(err, workload.ErrInvalid) {
				t.Errorf("error %v is not an input error", err)
			}
			return
		}
		p := c.persistence
		if p.ack < 1 || p.ack > p.write || p.write > p.ensemble || !validName(c.tenant) || !validName(c.namespace) || c.batchDelay < 0 || c.pendingQueueSize < 0 {
			t.Errorf("accepted an inconsistent config: %+v", c)
		}
	})
}

// placementAdmin is an admin API that knows topic "parted" of three
// partitions, its partition 2 owned by 127.0.1.2, topic "single" not
// partitioned, owned by 127.0.1.3, and 127.0.1.1 as the leading broker.
func placementAdmin() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/v2/persistent/public/brokerbench/{topic}/partitions", func(w http.ResponseWriter, r *http.Request) {
		n := map[string]int{"parted": 3}[r.PathValue("topic")]
		fmt.Fprintf(w, `{"partitions":%d}`, n)
	})
	mux.HandleFunc("GET /lookup/v2/topic/persistent/public/brokerbench/{topic}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("topic") {
		case "parted-partition-2":
			fmt.Fprint(w, `{"brokerUrl":"pulsar://127.0.1.2:6650","httpUrl":"http://127.0.1.2:8080"}`)
		case "single":
			fmt.Fprint(w, `{"brokerUrl":"","brokerUrlTls":"pulsar+ssl://127.0.1.3:6651"}`)
		default:
			http.Error(w, `{"reason":"no such topic"}`, http.StatusNotFound)
		}
	})
	mux.HandleFunc("GET /admin/v2/brokers/leaderBroker", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"brokerId":"127.0.1.1:8080","serviceUrl":"http://127.0.1.1:8080"}`)
	})
	return mux
}

// TestPlacementByLookup: the host serving a partition is the one a
// lookup of the partition's topic names (of a topic not partitioned, the
// topic's own), and the cluster's leading broker the one the admin API
// names; a partition the topic does not have is an error.
func TestPlacementByLookup(t *testing.T) {
	srv := httptest.NewServer(placementAdmin())
	defer srv.Close()
	drv, err := New(&workload.DriverConfig{Name: "pulsar", Source: "d.yaml", ReplicationFactor: 1}, driver.Options{Endpoints: []string{"pulsar://127.0.0.1:1", srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	place := drv.(driver.HostPlacement)
	ctx := context.Background()
	for _, tc := range []struct {
		topic     string
		partition int
		want      string
	}{{"parted", 2, "127.0.1.2"}, {"single", 0, "127.0.1.3"}} {
		if got, err := place.LeaderHost(ctx, tc.topic, tc.partition); err != nil || got != tc.want {
			t.Errorf("LeaderHost(%s, %d) = %q, %v; want %s", tc.topic, tc.partition, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		topic     string
		partition int
	}{{"parted", 3}, {"single", 1}, {"parted", -1}} {
		if got, err := place.LeaderHost(ctx, tc.topic, tc.partition); err == nil {
			t.Errorf("LeaderHost(%s, %d) = %q; want an error: no such partition", tc.topic, tc.partition, got)
		}
	}
	if got, err := place.ControllerHost(ctx); err != nil || got != "127.0.1.1" {
		t.Errorf("ControllerHost = %q, %v; want 127.0.1.1", got, err)
	}
}

// TestPlacementPassesOverABrokerDown: with the first broker's admin API
// refusing connections (the broker was killed), placement is asked of
// the next broker that answers; an answer, even a refusal, is final;
// and with none answering, the error says so.
func TestPlacementPassesOverABrokerDown(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // its address now refuses connections
	var notFoundAsked atomic.Int32
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		notFoundAsked.Add(1)
		http.Error(w, `{"reason":"not here"}`, http.StatusNotFound)
	}))
	defer notFound.Close()
	up := httptest.NewServer(placementAdmin())
	defer up.Close()
	placement := func(admins ...string) driver.HostPlacement {
		t.Helper()
		drv, err := New(&workload.DriverConfig{Name: "pulsar", Source: "d.yaml", ReplicationFactor: 1}, driver.Options{Endpoints: append([]string{"pulsar://127.0.0.1:1"}, admins...)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(drv.Close)
		return drv.(driver.HostPlacement)
	}
	ctx := context.Background()

	place := placement(down.URL, up.URL)
	if got, err := place.LeaderHost(ctx, "parted", 2); err != nil || got != "127.0.1.2" {
		t.Errorf("LeaderHost with the first broker down = %q, %v; want 127.0.1.2 from the second", got, err)
	}
	if got, err := place.ControllerHost(ctx); err != nil || got != "127.0.1.1" {
		t.Errorf("ControllerHost with the first broker down = %q, %v; want 127.0.1.1 from the second", got, err)
	}

	// The second answers 404: the third is not asked.
	if got, err := placement(down.URL, notFound.URL, up.URL).ControllerHost(ctx); err == nil || !strings.Contains(err.Error(), "not here") {
		t.Errorf("ControllerHost = %q, %v; want the answering broker's refusal", got, err)
	}
	if notFoundAsked.Load() != 1 {
		t.Errorf("the answering broker was asked %d times, want 1", notFoundAsked.Load())
	}

	if got, err := placement(down.URL, down.URL).ControllerHost(ctx); err == nil || !strings.Contains(err.Error(), "none of the 2 admin APIs answered") {
		t.Errorf("ControllerHost with every broker down = %q, %v; want an error saying none answered", got, err)
	}
}
