package amqp10

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// server is the RabbitMQ node the tests start, with its AMQP 1.0 plugin,
// on a port of their own, when the first test that needs it asks.
var server = testbroker.NewLazyLocal("rabbitmq", 29674)

func TestMain(m *testing.M) { server.Main(m) }

func driverConfig(queueType string) *workload.DriverConfig {
	return &workload.DriverConfig{Name: "rabbitmq-amqp10", Source: "test", ReplicationFactor: 1,
		Common: workload.Properties{{Key: "queueType", Value: queueType}, {Key: "addressFormat", Value: "v1"}}}
}

// TestConformance: the AMQP 1.0 driver passes the driver contract's
// conformance suite against a real RabbitMQ 3 with its AMQP 1.0 plugin,
// with classic and quorum queues. Its waits are bounded at a minute: at
// a load average of 30, sending the re-read case's 3,500 messages to a
// quorum queue through the plugin took more than 20 s, and its re-read
// as long again.
func TestConformance(t *testing.T) {
	for _, qt := range []string{"CLASSIC", "QUORUM"} {
		t.Run(qt, func(t *testing.T) {
			brokertest.Run(t, "rabbitmq-amqp10", drivertest.Target{
				Bound: time.Minute,
				Connect: func(t *testing.T) driver.Driver {
					d, err := New(driverConfig(qt), driver.Options{Endpoints: []string{server.Get(t).Addr}})
					if err != nil {
						t.Fatal(err)
					}
					return d
				},
				Unreachable: func(*testing.T) (driver.Driver, error) {
					return New(driverConfig(qt), driver.Options{Endpoints: []string{"127.0.0.1:1"}})
				},
			})
		})
	}
}

// TestVersionAndMissingTopic: the broker says its release, and a
// producer of a topic never made fails naming it, before any link.
func TestVersionAndMissingTopic(t *testing.T) {
	d, err := New(driverConfig("CLASSIC"), driver.Options{Endpoints: []string{server.Get(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if v, err := d.BrokerVersion(ctx); err != nil || !strings.HasPrefix(v, "RabbitMQ 3.") {
		t.Errorf("BrokerVersion = %q, %v; want RabbitMQ 3.x", v, err)
	}
	_, err = d.NewProducer(ctx, driver.ProducerSpec{Topic: "bb-never-made"}, func(*driver.Message, error) {})
	if !errors.Is(err, driver.ErrTopicNotFound) {
		t.Errorf("a producer of a missing topic: %v; want ErrTopicNotFound", err)
	}
}

// TestAddresses: the addresses of an exchange's routing key and of a
// queue, in each format.
func TestAddresses(t *testing.T) {
	cases := []struct {
		format          addressFormat
		exchange, queue string
		target, source  string
	}{
		// RabbitMQ 3: the plugin's exchange address, and the address of
		// a queue that exists (not declared by the plugin).
		{formatV1, "bb-t1", "sub.0", "/exchange/bb-t1/0", "/amq/queue/sub.0"},
		// RabbitMQ 4: plural segments.
		{formatV2, "bb-t1", "sub.0", "/exchanges/bb-t1/0", "/queues/sub.0"},
		// v2's parts are percent-encoded (names the driver takes need
		// none, others would).
		{formatV2, "a b", "q/1", "/exchanges/a%20b/0", "/queues/q%2F1"},
	}
	for _, c := range cases {
		if got := c.format.exchange(c.exchange, routingKey); got != c.target {
			t.Errorf("%s target of %q: %q; want %q", c.format, c.exchange, got, c.target)
		}
		if got := c.format.queue(c.queue); got != c.source {
			t.Errorf("%s source of %q: %q; want %q", c.format, c.queue, got, c.source)
		}
	}
}

// TestSettings: the driver's own settings and those it leaves to the
// AMQP 0-9-1 driver, their defaults and refusals.
func TestSettings(t *testing.T) {
	prop := func(k, v string) workload.Property {
		return workload.Property{Key: k, Value: v, File: "d.yaml", Line: 3}
	}
	cases := []struct {
		name     string
		common   workload.Properties
		consumer workload.Properties
		rf       int
		format   addressFormat
		credit   int
		err      string // a part of the error; "" for none
	}{
		// Nothing given: RabbitMQ 3's addresses, classic queues.
		{name: "defaults", format: formatV1, credit: 1000},
		// RabbitMQ 4's addresses, quorum queues of 3 replicas.
		{name: "v2 quorum", common: workload.Properties{prop("addressFormat", "v2"), prop("queueType", "QUORUM")}, rf: 3, format: formatV2, credit: 1000},
		{name: "credit", consumer: workload.Properties{prop("credit", "10")}, format: formatV1, credit: 10},
		// An unknown format is refused where it was set.
		{name: "format", common: workload.Properties{prop("addressFormat", "v3")}, err: "d.yaml:3"},
		// Streams are read from an offset, which the plugin cannot ask for.
		{name: "stream", common: workload.Properties{prop("queueType", "STREAM")}, err: "rabbitmq-stream"},
		// The AMQP 0-9-1 driver's refusals stand: a classic queue has
		// one copy.
		{name: "classic replicated", rf: 3, err: "classic queues keep one copy"},
		// Credit is at least 1.
		{name: "credit 0", consumer: workload.Properties{prop("credit", "0")}, err: "d.yaml:3"},
		// The AMQP 0-9-1 driver's consumer settings are not this driver's.
		{name: "prefetch", consumer: workload.Properties{prop("prefetch", "10")}, err: "supported: credit"},
		// Both drivers' refusals come at once.
		{name: "both", common: workload.Properties{prop("addressFormat", "v9"), prop("queueType", "FIFO")}, err: "CLASSIC, QUORUM or STREAM"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dc := &workload.DriverConfig{Name: "rabbitmq-amqp10", Source: "d.yaml", Common: c.common, Consumer: c.consumer, ReplicationFactor: c.rf}
			d, err := New(dc, driver.Options{})
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v; want one containing %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				cfg := d.(*Driver).cfg
				if cfg.format != c.format || cfg.credit != c.credit {
					t.Errorf("format %q, credit %d; want %q, %d", cfg.format, cfg.credit, c.format, c.credit)
				}
			}
		})
	}
}

// TestNodes: each URI is a node reached over AMQP 1.0 with its user and
// its virtual host in the open frame, in turn; the results file shows
// both drivers' settings and no password.
func TestNodes(t *testing.T) {
	dc := &workload.DriverConfig{Name: "rabbitmq-amqp10", Source: "test", Common: workload.Properties{
		{Key: "amqpUris", Value: "amqp://u:s3cret@h1:5672/,amqp://u:s3cret@h2:5673/bench"}, {Key: "addressFormat", Value: "v2"}}}
	dr, err := New(dc, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := dr.(*Driver)
	for i, want := range []struct{ addr, host string }{{"h1:5672", "vhost:/"}, {"h2:5673", "vhost:bench"}, {"h1:5672", "vhost:/"}} {
		n := d.node()[0]
		if n.Addr != want.addr || n.HostName != want.host || n.Username != "u" || n.TLS != nil {
			t.Errorf("client %d: %s, %q, user %q, TLS %v; want %s, %q, u, none", i, n.Addr, n.HostName, n.Username, n.TLS != nil, want.addr, want.host)
		}
	}
	common := d.EffectiveConfig()["common"]
	for _, key := range []string{"addressFormat", "amqpUris", "queueType"} {
		if _, ok := common.Get(key); !ok {
			t.Errorf("the effective config lacks %s: %v", key, common)
		}
	}
	for _, p := range common {
		if strings.Contains(p.Value, "s3cret") {
			t.Errorf("%s = %q shows the password", p.Key, p.Value)
		}
	}
}

// FuzzSettings: no value of the driver's own settings or of a setting it
// passes on makes New panic, and one it accepts is a known format and a
// credit of at least 1, whose addresses are made of the names it takes
// without change (v1) or decode back to them (v2).
func FuzzSettings(f *testing.F) {
	for _, s := range [][4]string{{"addressFormat", "v1", "credit", "1"}, {"addressFormat", "v2", "credit", "1000"}, {"queueType", "QUORUM", "credit", "x"}, {"amqpUris", "amqp://h:1/v", "credit", "-1"}, {"addressFormat", "", "credit", ""}} {
		f.Add(s[0], s[1], s[2], s[3], "topic.1", "sub-a")
	}
	f.Fuzz(func(t *testing.T, key, value, consumerKey, consumerValue, topic, subscription string) {
		dc := &workload.DriverConfig{Name: "rabbitmq-amqp10", Source: "fuzz", Common: workload.Properties{{Key: key, Value: value}},
			Consumer: workload.Properties{{Key: consumerKey, Value: consumerValue}}}
		dr, err := New(dc, driver.Options{})
		if err != nil {
			return
		}
		cfg := dr.(*Driver).cfg
		if (cfg.format != formatV1 && cfg.format != formatV2) || cfg.credit < 1 {
			t.Fatalf("accepted format %q, credit %d", cfg.format, cfg.credit)
		}
		if checkName("topic", topic) != nil || checkName("subscription", subscription) != nil {
			return
		}
		target, source := cfg.format.exchange(topic, routingKey), cfg.format.queue(subscription)
		parts := strings.Split(strings.TrimPrefix(target, "/"), "/")
		queue := source[strings.LastIndex(source, "/")+1:]
		if cfg.format == formatV2 {
			for i := range parts {
				parts[i], _ = url.PathUnescape(parts[i])
			}
			queue, _ = url.PathUnescape(queue)
		}
		if len(parts) != 3 || parts[1] != topic || parts[2] != routingKey || queue != subscription {
			t.Errorf("%s addresses of %q and %q: %q, %q", cfg.format, topic, subscription, target, source)
		}
	})
}
