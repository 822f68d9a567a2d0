package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/pki"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lazyBroker is the test broker, started by the first test that needs it.
var lazyBroker = testbroker.NewLazy(29092)

func TestMain(m *testing.M) { lazyBroker.Main(m) }

func newDriver(t *testing.T, producer ...workload.Property) driver.Driver {
	t.Helper()
	d, err := New(&workload.DriverConfig{Name: "kafka", Source: "test", ReplicationFactor: 1, Producer: producer}, driver.Options{Endpoints: []string{lazyBroker.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestRoundTrip produces messages and consumes them back: every ack
// callback is called exactly once, every message arrives intact, and the
// broker's offsets agree.
func TestRoundTrip(t *testing.T) {
	for _, codec := range []string{"none", "zstd", "lz4", "snappy", "gzip"} {
		t.Run(codec, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d := newDriver(t, workload.Property{Key: "compression.type", Value: codec}, workload.Property{Key: "acks", Value: "1"})
			topic := "roundtrip-" + codec
			if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 3}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = d.DeleteTopic(context.Background(), topic) }()

			const n = 2000
			var mu sync.Mutex
			got := map[string]int{}
			done := make(chan struct{})
			c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: topic + "-g"}, func(del *driver.Delivery) {
				mu.Lock()
				defer mu.Unlock()
				got[string(del.Value)]++
				if len(got) == n {
					close(done)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Ready(ctx); err != nil {
				t.Fatal(err)
			}
			acks := make([]int, n)
			var ackMu sync.Mutex
			var ackErr error
			p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, func(m *driver.Message, err error) {
				ackMu.Lock()
				defer ackMu.Unlock()
				acks[m.Slot]++
				if err != nil {
					ackErr = err
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			msgs := make([]driver.Message, n)
			for i := range msgs {
				msgs[i] = driver.Message{Value: []byte(fmt.Sprintf("message-%05d", i)), Slot: i}
				p.Send(ctx, &msgs[i])
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if ackErr != nil {
				t.Fatal(ackErr)
			}
			for i, a := range acks {
				if a != 1 {
					t.Fatalf("message %d acked %d times", i, a)
				}
			}
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("consumed %d of %d", len(got), n)
			}
			mu.Lock()
			for i := range n {
				if got[fmt.Sprintf("message-%05d", i)] != 1 {
					t.Fatalf("message %d consumed %d times", i, got[fmt.Sprintf("message-%05d", i)])
				}
			}
			mu.Unlock()
			stored, err := d.(driver.WrittenCounter).Written(ctx, topic)
			if err != nil || stored != n {
				t.Fatalf("broker stores %d (%v), want %d", stored, err, n)
			}
		})
	}
}

func TestBrokerVersion(t *testing.T) {
	v, err := newDriver(t).BrokerVersion(context.Background())
	if err != nil || !strings.Contains(v, "Kafka") {
		t.Fatalf("version %q, %v", v, err)
	}
}

func TestUnreachableBroker(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "kafka", Source: "test"}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = d.BrokerVersion(ctx)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "local up kafka") {
		t.Fatalf("unhelpful error: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		dc   workload.DriverConfig
		want []string
	}{
		// Unknown properties are errors, located by file and line.
		{"unknown", workload.DriverConfig{Producer: workload.Properties{{Key: "lingerms", Value: "1", File: "d.yaml", Line: 7}}},
			[]string{"d.yaml:7", "lingerms", "unsupported", "linger.ms"}},
		// Values are checked.
		{"bad acks", workload.DriverConfig{Producer: workload.Properties{{Key: "acks", Value: "2", File: "d.yaml", Line: 3}}},
			[]string{"d.yaml:3", "one of 0, 1, all, -1"}},
		{"bad compression", workload.DriverConfig{Producer: workload.Properties{{Key: "compression.type", Value: "brotli"}}},
			[]string{"compression.type", "zstd"}},
		// A consumer property in the producer section is pointed to its place.
		{"wrong section", workload.DriverConfig{Producer: workload.Properties{{Key: "fetch.min.bytes", Value: "1"}}},
			[]string{"fetch.min.bytes", "consumer property", "consumerConfig"}},
		// The Java client's cross-checks.
		{"idempotence needs acks=all", workload.DriverConfig{Producer: workload.Properties{{Key: "acks", Value: "1"}, {Key: "enable.idempotence", Value: "true"}}},
			[]string{"enable.idempotence=true needs acks=all"}},
		{"security protocol", workload.DriverConfig{Common: workload.Properties{{Key: "security.protocol", Value: "TLS"}}},
			[]string{"security.protocol", "SASL_SSL"}},
		// SASL without a mechanism would be Kerberos in Java.
		{"sasl without mechanism", workload.DriverConfig{Common: workload.Properties{{Key: "security.protocol", Value: "SASL_SSL"}}},
			[]string{"sasl.mechanism is not set", "GSSAPI"}},
		{"sasl without user", workload.DriverConfig{Common: workload.Properties{{Key: "security.protocol", Value: "sasl_plaintext"}, {Key: "sasl.mechanism", Value: "PLAIN"}}},
			[]string{"sasl.jaas.config is not set", "PlainLoginModule"}},
		{"login module of another mechanism", workload.DriverConfig{Common: workload.Properties{{Key: "security.protocol", Value: "SASL_PLAINTEXT"},
			{Key: "sasl.mechanism", Value: "SCRAM-SHA-256"}, {Key: "sasl.jaas.config", Value: `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`}}},
			[]string{"needs org.apache.kafka.common.security.scram.ScramLoginModule"}},
		{"oauth", workload.DriverConfig{Common: workload.Properties{{Key: "sasl.mechanism", Value: "OAUTHBEARER"}}},
			[]string{"sasl.mechanism", "SCRAM-SHA-512"}},
		{"missing trust store", workload.DriverConfig{Common: workload.Properties{{Key: "security.protocol", Value: "SSL"}, {Key: "ssl.truststore.location", Value: "/nonexistent/ca.p12"}}},
			[]string{"ssl.truststore.location", "/nonexistent/ca.p12"}},
		{"no TLS version left", workload.DriverConfig{Common: workload.Properties{{Key: "security.protocol", Value: "SSL"}, {Key: "ssl.enabled.protocols", Value: "TLSv1,TLSv1.1"}}},
			[]string{"ssl.enabled.protocols"}},
		{"serializer", workload.DriverConfig{Producer: workload.Properties{{Key: "value.serializer", Value: "org.apache.kafka.common.serialization.StringSerializer"}}},
			[]string{"ByteArray"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.dc.Source = "d.yaml"
			_, err := parseConfig(&tc.dc, []string{"127.0.0.1:1"}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, workload.ErrInvalid) {
				t.Errorf("not ErrInvalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := parseConfig(&workload.DriverConfig{Source: "d.yaml"}, nil, nil); err == nil || !strings.Contains(err.Error(), "bootstrap.servers") {
		t.Errorf("missing address not reported: %v", err)
	}
}

func TestParseJAAS(t *testing.T) {
	module, opts, err := parseJAAS(` org.apache.kafka.common.security.scram.ScramLoginModule required
		username="alice" password="p\"w;x y" tokenauth=true ;`)
	if err != nil {
		t.Fatal(err)
	}
	if module != "org.apache.kafka.common.security.scram.ScramLoginModule" || opts["username"] != "alice" || opts["password"] != `p"w;x y` || opts["tokenauth"] != "true" {
		t.Errorf("parsed %q %q", module, opts)
	}
	for in, want := range map[string]string{
		"":                                    "login module class",
		"x.PlainLoginModule":                  "control flag",
		"x.PlainLoginModule mandatory a=b;":   "control flag",
		`x.PlainLoginModule required a="b"`:   "closing ';'",
		`x.PlainLoginModule required a="b;`:   "unterminated",
		`x.PlainLoginModule required a;`:      "key=value",
		`x.A required a=b; x.B required c=d;`: "only one login module",
		`x.PlainLoginModule required ="v";`:   "key=value",
	} {
		if _, _, err := parseJAAS(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseJAAS(%q) = %v, want an error about %q", in, err, want)
		}
	}
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`)
	f.Add(`a sufficient k=v k2="x\"y";`)
	f.Fuzz(func(t *testing.T, s string) {
		module, opts, err := parseJAAS(s)
		if err == nil && (module == "" || opts == nil) {
			t.Errorf("parseJAAS(%q): no error, module %q, options %v", s, module, opts)
		}
	})
}

// TestSecuritySettings checks how the security settings become TLS and
// SASL: the credentials of the config win over a local cluster's, and a
// password in sasl.jaas.config is kept out of outputs.
func TestSecuritySettings(t *testing.T) {
	ca, err := pki.NewAuthority("t")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pki.CertPEM(ca.Certificate()), 0o644); err != nil {
		t.Fatal(err)
	}
	local := &driver.Credentials{CAFile: caFile, Username: "local-user", Password: "local-password"}
	parse := func(props ...string) *security {
		t.Helper()
		var p workload.Properties
		for i := 0; i+1 < len(props); i += 2 {
			p = append(p, workload.Property{Key: props[i], Value: props[i+1]})
		}
		c, err := parseConfig(&workload.DriverConfig{Source: "t", Common: p}, []string{"127.0.0.1:1"}, local)
		if err != nil {
			t.Fatal(err)
		}
		return c.secure[scopeProducer]
	}
	if s := parse(); s.tls != nil || s.mechanism != nil {
		t.Error("PLAINTEXT got TLS or SASL")
	}
	s := parse("security.protocol", "SSL", "ssl.protocol", "TLSv1.2")
	if s.tls == nil || s.mechanism != nil || s.tls.MaxVersion != tls.VersionTLS12 || s.tls.RootCAs == nil {
		t.Errorf("SSL with ssl.protocol=TLSv1.2: %+v", s)
	}
	if s.tls.InsecureSkipVerify {
		t.Error("host names are checked by default (ssl.endpoint.identification.algorithm=https)")
	}
	if s := parse("security.protocol", "SSL", "ssl.endpoint.identification.algorithm", ""); !s.tls.InsecureSkipVerify || s.tls.VerifyConnection == nil {
		t.Error("without endpoint identification, the chain must still be verified")
	}
	s = parse("security.protocol", "SASL_SSL", "sasl.mechanism", "SCRAM-SHA-512")
	if s.mechanism == nil || s.mechanism.Name() != "SCRAM-SHA-512" {
		t.Errorf("mechanism %v", s.mechanism)
	}
	s = parse("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="cfg-user" password="cfg-password-42";`)
	if s.tls != nil || s.mechanism.Name() != "PLAIN" {
		t.Errorf("SASL_PLAINTEXT: %+v", s)
	}
	_, msg, _ := s.mechanism.Authenticate(context.Background(), "host")
	if !strings.Contains(string(msg), "cfg-user") || strings.Contains(string(msg), "local-user") {
		t.Errorf("PLAIN sends %q: the config's user must win over the local cluster's", msg)
	}
	if got := secret.Redact("pw cfg-password-42"); strings.Contains(got, "cfg-password-42") {
		t.Errorf("the password in sasl.jaas.config is not redacted: %q", got)
	}
}

func TestDefaultsFollowJavaClient(t *testing.T) {
	c, err := parseConfig(&workload.DriverConfig{Source: "t", Producer: workload.Properties{{Key: "acks", Value: "1"}}}, []string{"127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"linger.ms": "5", "batch.size": "16384", "compression.type": "none", "acks": "1"} {
		if v, _ := c.producer.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if c.idempotent() {
		t.Error("acks=1 must disable idempotence, as in the Java client")
	}
	all, _ := parseConfig(&workload.DriverConfig{Source: "t"}, []string{"127.0.0.1:1"}, nil)
	if !all.idempotent() {
		t.Error("acks=all defaults to idempotence")
	}
}

func TestBrokersCountsTheCluster(t *testing.T) {
	d := newDriver(t)
	n, err := d.(driver.ClusterSizer).Brokers(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Brokers() = %d, %v; the test cluster is one broker", n, err)
	}
}

// TestRecordTimestampIsSendTime: a message's Time becomes the record's
// CreateTime, to the millisecond, so the broker sees the runner's send time.
func TestRecordTimestampIsSendTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := newDriver(t)
	const topic = "record-timestamp"
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.DeleteTopic(context.Background(), topic) }()
	acked := make(chan error, 1)
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: 1}, func(_ *driver.Message, err error) { acked <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendTime := time.Now().Add(-3 * time.Second).UnixNano()
	p.Send(ctx, &driver.Message{Value: []byte("stamped"), Time: sendTime})
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(lazyBroker.Get(t).Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fetches := cl.PollRecords(ctx, 1)
	if err := fetches.Err(); err != nil {
		t.Fatal(err)
	}
	recs := fetches.Records()
	if len(recs) != 1 {
		t.Fatalf("fetched %d records, want 1", len(recs))
	}
	if got, want := recs[0].Timestamp.UnixMilli(), sendTime/1e6; got != want {
		t.Errorf("record timestamp %d ms, want the send time %d ms", got, want)
	}
}

// TestConformance: the Kafka driver passes the conformance suite against
// a real broker.
func TestConformance(t *testing.T) {
	brokertest.Run(t, "kafka", drivertest.Target{
		Connect: func(t *testing.T) driver.Driver { return newDriver(t, workload.Property{Key: "linger.ms", Value: "1"}) },
		Unreachable: func(*testing.T) (driver.Driver, error) {
			return New(&workload.DriverConfig{Name: "kafka", Source: "test", ReplicationFactor: 1,
				Common: workload.Properties{{Key: "default.api.timeout.ms", Value: "5000"}}}, driver.Options{Endpoints: []string{"127.0.0.1:1"}})
		},
	})
}

// TestGroupIDPrefixesTheGroups: a consumerConfig group.id (as in the
// consumer.properties of Kafka's own tools) becomes the prefix of the
// subscription's consumer group, so prefixed ACLs admit it; the group
// settles under that name.
func TestGroupIDPrefixesTheGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := New(&workload.DriverConfig{Name: "kafka", Source: "test", ReplicationFactor: 1,
		Consumer: workload.Properties{{Key: "group.id", Value: "kafka-perf"}}}, driver.Options{Endpoints: []string{lazyBroker.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const topic = "group-prefix"
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.DeleteTopic(context.Background(), topic) }()
	c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "sub-1"}, func(*driver.Delivery) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := d.(driver.SubscriptionWaiter).WaitSubscription(ctx, topic, "sub-1", 1); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(lazyBroker.Get(t).Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	groups, err := kadm.NewClient(cl).DescribeGroups(ctx, "kafka-perf-sub-1")
	if err != nil || groups["kafka-perf-sub-1"].State != "Stable" {
		t.Errorf("group kafka-perf-sub-1: %+v, %v", groups["kafka-perf-sub-1"], err)
	}
}
