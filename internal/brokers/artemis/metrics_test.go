package artemis

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
)

var update = flag.Bool("update", false, "record testdata/jolokia.json from the test broker")

// recorded is the answer of the test broker's Jolokia agent to a
// scrape, recorded by TestMetricsDuringProduce with -update: one
// broker, after messages were sent to a topic of one subscription
// while it had a consumer.
const recorded = "testdata/jolokia.json"

// TestParseJolokia: the recorded answer of a real broker is read as the
// broker's totals and the sums over its addresses and queues, the
// broker's own addresses left out of the messages sent; a read that
// failed, an answer to other reads and what is not JSON are errors; a
// read of addresses that matched none is none.
func TestParseJolokia(t *testing.T) {
	answer, err := os.ReadFile(recorded)
	if err != nil {
		t.Fatal(err)
	}
	c, g, err := ParseJolokia(bytes.NewReader(answer))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counters %v\ngauges %v", c, g)
	for _, k := range []string{"artemis_messages_in_total", "artemis_messages_added_total", "artemis_messages_out_total", "artemis_connections_created_total"} {
		if c[k] <= 0 {
			t.Errorf("%s = %v, want the messages and connections of the recorded run", k, c[k])
		}
	}
	if c["artemis_messages_out_total"] > c["artemis_messages_added_total"] {
		t.Errorf("more messages acknowledged (%v) than added to queues (%v)", c["artemis_messages_out_total"], c["artemis_messages_added_total"])
	}
	for _, k := range []string{"artemis_connections", "artemis_queues", "artemis_addresses", "artemis_address_memory_max_bytes", "artemis_disk_store_usage_ratio"} {
		if g[k] <= 0 {
			t.Errorf("%s = %v, want more than 0 on a running broker", k, g[k])
		}
	}
	if r := g["artemis_disk_store_usage_ratio"]; r > 1 {
		t.Errorf("share of the disk used %v, more than all of it", r)
	}

	// A made answer: two addresses of clients, one of the broker's own.
	made := `[{"status":200,"value":{"org.apache.activemq.artemis:broker=\"b\"":{"TotalMessagesAdded":30,"TotalMessagesAcknowledged":20,
		"TotalMessageCount":10,"ConnectionCount":2,"GlobalMaxSize":-1,"DiskStoreUsage":0.5,"AddressMemoryUsage":4096}}},
	{"status":200,"value":{
		"org.apache.activemq.artemis:address=\"t,1\",broker=\"b\",component=addresses":{"RoutedMessageCount":12,"UnRoutedMessageCount":3,"Paging":true,"NumberOfPages":2},
		"org.apache.activemq.artemis:address=\"q\",broker=\"b\",component=addresses":{"RoutedMessageCount":5,"Paging":false},
		"org.apache.activemq.artemis:address=\"activemq.notifications\",broker=\"b\",component=addresses":{"RoutedMessageCount":100,"UnRoutedMessageCount":7}}},
	{"status":404,"error":"No MBean with pattern found"}]`
	c, g, err = ParseJolokia(strings.NewReader(made))
	if err != nil {
		t.Fatal(err)
	}
	if c["artemis_messages_in_total"] != 20 || c["artemis_messages_unrouted_total"] != 3 || c["artemis_messages_added_total"] != 30 ||
		c["artemis_messages_out_total"] != 20 || c["artemis_messages_killed_total"] != 0 {
		t.Errorf("counters %v", c)
	}
	if g["artemis_messages"] != 10 || g["artemis_connections"] != 2 || g["artemis_addresses_paging"] != 1 || g["artemis_pages"] != 2 ||
		g["artemis_address_memory_bytes"] != 4096 || g["artemis_address_memory_max_bytes"] != 0 || g["artemis_disk_store_usage_ratio"] != 0.5 {
		t.Errorf("gauges %v", g)
	}

	for name, text := range map[string]string{
		"the broker's read failed": `[{"status":403,"error":"User not authorized"},{"status":200,"value":{}},{"status":200,"value":{}}]`,
		"no broker":                `[{"status":200,"value":{}},{"status":200,"value":{}},{"status":200,"value":{}}]`,
		"one answer to one read":   `[{"status":200,"value":{"org.apache.activemq.artemis:broker=\"b\"":{}}}]`,
		"a single read's answer":   `{"status":200,"value":{}}`,
		"not JSON":                 `<html>`,
	} {
		if _, _, err := ParseJolokia(strings.NewReader(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestMBeanKey: a key's value is read from an MBean's name, quoted or
// not, with its escapes undone.
func TestMBeanKey(t *testing.T) {
	for _, tc := range []struct{ name, key, want string }{
		{`d:address="a,b=c",broker="0.0.0.0"`, "address", "a,b=c"},
		{`d:address="a,b=c",broker="0.0.0.0"`, "broker", "0.0.0.0"},
		{`d:broker=plain,address="x\"y\\z\?\n"`, "address", "x\"y\\z?\n"},
		{`d:broker=plain,component=addresses`, "component", "addresses"},
		{`d:broker="b"`, "address", ""},
		{`no domain`, "address", ""},
		{`d:address="unterminated`, "address", "unterminated"},
	} {
		if got := mbeanKey(tc.name, tc.key); got != tc.want {
			t.Errorf("mbeanKey(%q, %q) = %q, want %q", tc.name, tc.key, got, tc.want)
		}
	}
}

// TestServesJolokia: the module's metrics are read at a Jolokia agent's
// URL, and at no other broker's.
func TestServesJolokia(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://brokerbench@127.0.0.1:8161/console/jolokia": true,
		"https://u:p@10.0.0.5:8161/console/jolokia/":        true,
		"http://10.0.0.5:8778/jolokia":                      true,
		"http://10.0.0.5:7071/metrics":                      false,
		"http://10.0.0.5:8222/varz":                         false,
		"redis://10.0.0.5:6379":                             false,
		"http://10.0.0.5:8161/console/jolokiax":             false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := servesJolokia(u); got != want {
			t.Errorf("servesJolokia(%s) = %v", raw, got)
		}
	}
}

func FuzzParseJolokia(f *testing.F) {
	if answer, err := os.ReadFile(recorded); err == nil {
		f.Add(string(answer))
	}
	f.Add(`[{"status":200,"value":{"d:broker=\"b\"":{"TotalMessagesAdded":1}}},{"status":404},{"status":200,"value":{"d:address=\"a\"":{"Paging":true}}}]`)
	f.Fuzz(func(t *testing.T, text string) {
		c, g, err := ParseJolokia(strings.NewReader(text))
		if err == nil && (c == nil || g == nil) {
			t.Error("no error and nil maps")
		}
		for k, v := range c {
			if v < 0 {
				t.Errorf("counter %s = %v, negative", k, v)
			}
		}
	})
}

// TestMetricsDuringProduce: the test broker (secured) serves its metrics
// on its console's Jolokia agent, at the endpoint its status gives, to
// its user with the cluster's password and to no one without; read
// while producers send to a topic with a subscription, the messages
// added to queues rise, and once the sends are acknowledged they have
// risen by at least as many. With -update, the last answer is recorded.
func TestMetricsDuringProduce(t *testing.T) {
	b := server.Get(t)
	c := b.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	endpoint := c.Status().Nodes[0].MetricsURL
	u, err := url.Parse(endpoint)
	if err != nil || !servesJolokia(u) || u.User == nil {
		t.Fatalf("the node's metrics endpoint %q is not a Jolokia agent's with the user to log in as", endpoint)
	}
	if _, set := u.User.Password(); set {
		t.Fatalf("the node's status gives its metrics endpoint with the password: %s", u.Redacted())
	}
	if read := brokers.MetricsReader(endpoint); read == nil {
		t.Fatal("no reader for the endpoint")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if _, _, err := readJolokia(ctx, client, endpoint); err == nil {
		t.Error("read without the password: no error")
	}
	pw, err := c.Security().Password()
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	withPassword := u.String()
	read := func() map[string]float64 {
		t.Helper()
		start := time.Now()
		answer, err := fetchJolokia(ctx, client, withPassword)
		if err != nil {
			t.Fatal(err)
		}
		counters, _, err := ParseJolokia(bytes.NewReader(answer))
		if err != nil {
			t.Fatalf("%v\n%s", err, answer)
		}
		t.Logf("read in %v: %v", time.Since(start).Round(time.Millisecond), counters)
		if *update {
			if err := os.WriteFile(filepath.Join("testdata", "jolokia.json"), answer, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return counters
	}
	before := read()

	d, err := connect(t, "plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	topic := "bb-metrics-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var consumed atomic.Int64
	cons, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: "s", Start: driver.StartNew}, func(*driver.Delivery) { consumed.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var acked atomic.Int64
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: 100}, func(_ *driver.Message, err error) {
		if err == nil {
			acked.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := 0; ctx.Err() == nil && i < 3000; i++ {
			p.Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "m-%d", i)})
			if i%100 == 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	for acked.Load() == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	during := read()
	if during["artemis_messages_added_total"] <= before["artemis_messages_added_total"] {
		t.Errorf("read after %d messages were acknowledged: messages added %v, %v before", acked.Load(), during["artemis_messages_added_total"], before["artemis_messages_added_total"])
	}
	<-sent
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for consumed.Load() < acked.Load() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	// The consumers' acknowledgements reach the broker after the
	// messages reached them: they are waited for.
	n := float64(acked.Load())
	risen := func(after map[string]float64) (short []string) {
		for _, k := range []string{"artemis_messages_added_total", "artemis_messages_in_total", "artemis_messages_out_total"} {
			if rise := after[k] - before[k]; rise < n {
				short = append(short, fmt.Sprintf("%s rose by %v", k, rise))
			}
		}
		return short
	}
	short := risen(read())
	for deadline := time.Now().Add(20 * time.Second); len(short) > 0 && time.Now().Before(deadline); short = risen(read()) {
		time.Sleep(500 * time.Millisecond)
	}
	if len(short) > 0 {
		t.Errorf("after %v messages were acknowledged and consumed: %s", n, strings.Join(short, ", "))
	}
}
