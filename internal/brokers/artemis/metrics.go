package artemis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// A broker's metrics are read from the Jolokia agent of its web console
// (JMX over HTTP, JSON) at http://HOST:PORT/console/jolokia, with one
// POST of three reads of MBean patterns: the broker's totals, every
// address's and every queue's counts, which are summed.

// jolokiaDomain is the JMX domain of Artemis' MBeans.
const jolokiaDomain = "org.apache.activemq.artemis:"

// jolokiaReads is the body of a scrape: a bulk request of the broker's,
// the addresses' and the queues' attributes brokerbench reads. A pattern
// matches MBeans with exactly its keys, so the addresses' does not match
// their queues.
var jolokiaReads = func() []byte {
	reads := []map[string]any{
		{"type": "read", "mbean": jolokiaDomain + "broker=*", "attribute": []string{
			"TotalMessagesAdded", "TotalMessagesAcknowledged", "TotalMessageCount", "TotalConnectionCount",
			"ConnectionCount", "SessionCount", "TotalConsumerCount", "QueueCount", "AddressCount",
			"AddressMemoryUsage", "GlobalMaxSize", "DiskStoreUsage",
			"AuthenticationFailureCount", "AuthorizationFailureCount"}},
		{"type": "read", "mbean": jolokiaDomain + "broker=*,component=addresses,address=*", "attribute": []string{
			"RoutedMessageCount", "UnRoutedMessageCount", "Paging", "NumberOfPages"}},
		{"type": "read", "mbean": jolokiaDomain + "broker=*,component=addresses,address=*,subcomponent=queues,routing-type=*,queue=*",
			"attribute": []string{"MessagesExpired", "MessagesKilled", "DeliveringCount", "ScheduledCount", "PersistentSize"}},
	}
	body, err := json.Marshal(reads)
	if err != nil {
		panic(err)
	}
	return body
}()

// jolokiaAnswer is one read's answer in a bulk answer: by MBean name,
// the attributes read; or, with a status other than 200, why not.
type jolokiaAnswer struct {
	Status int                                   `json:"status"`
	Error  string                                `json:"error"`
	Value  map[string]map[string]json.RawMessage `json:"value"`
}

// servesJolokia reports whether a metrics endpoint is a Jolokia agent:
// its path's last segment is "jolokia" (Artemis' console serves it at
// /console/jolokia).
func servesJolokia(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/jolokia")
}

// readJolokia reads a broker's metrics from the Jolokia agent at rawURL
// (see fetchJolokia, ParseJolokia).
func readJolokia(ctx context.Context, client *http.Client, rawURL string) (counters, gauges map[string]float64, err error) {
	answer, err := fetchJolokia(ctx, client, rawURL)
	if err != nil {
		return nil, nil, err
	}
	return ParseJolokia(bytes.NewReader(answer))
}

// fetchJolokia sends a scrape's bulk request to the Jolokia agent at
// rawURL, http://USER[:PASSWORD]@HOST:PORT/console/jolokia, logged in as
// USER (HTTP basic authentication; Artemis' console lets no request in
// without) and with an Origin of the URL's own scheme and host, which
// the agent's default policy asks of every request, and returns the
// answer. The password never leaves the request: errors name the URL
// without it.
func fetchJolokia(ctx context.Context, client *http.Client, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("Jolokia endpoint: %w", err)
	}
	user := u.User
	u.User = nil
	where := u.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, where, bytes.NewReader(jolokiaReads))
	if err != nil {
		return nil, fmt.Errorf("Jolokia endpoint %s: %w", where, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	if user != nil {
		pw, _ := user.Password()
		req.SetBasicAuth(user.Username(), pw)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read %s: %s (a console that asks for a login: give it as http://USER:PASSWORD@HOST:PORT/console/jolokia)", where, resp.Status)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxJolokiaBody))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	return answer, nil
}

// maxJolokiaBody bounds what is read of one answer: a broker with tens of
// thousands of queues answers with megabytes.
const maxJolokiaBody = 8 << 20

// internalAddress reports whether an address is one of the broker's own
// (management, notifications, MQTT's sessions, a cluster's
// store-and-forward queues), whose messages are not the clients'.
func internalAddress(name string) bool {
	for _, p := range []string{"activemq.", "$sys.", "$.artemis.internal."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ParseJolokia reads the answer to a scrape's bulk request as counters
// and gauges named as a Prometheus exporter would. Of the broker:
// messages added to queues (one per queue a message is routed to) and
// acknowledged by consumers ("out"), connections made, failed logins and
// refused operations (counters); messages in queues, connections,
// sessions, consumers, queues, addresses, the bytes its addresses hold
// in memory and their limit (global-max-size), and the share of its
// disk used (gauges). Summed over the clients' addresses (not the
// broker's own, see internalAddress): messages sent to them ("in",
// routed to a queue or not) and unrouted; addresses paging and their
// page files. Summed over every queue: messages expired and killed (sent
// to the dead letter address), counters; messages being delivered,
// scheduled, and the bytes of the messages queued, gauges. An answer
// that is not Jolokia's, or whose read of the broker failed, is an
// error; a read of addresses or queues that matched none is none.
func ParseJolokia(r io.Reader) (counters, gauges map[string]float64, err error) {
	var answers []jolokiaAnswer
	if err := json.NewDecoder(r).Decode(&answers); err != nil {
		return nil, nil, fmt.Errorf("Artemis Jolokia answer: %w", err)
	}
	if len(answers) != 3 {
		return nil, nil, fmt.Errorf("Artemis Jolokia answer: %d answers to 3 reads", len(answers))
	}
	for i, a := range answers {
		if a.Status == http.StatusOK || (i > 0 && a.Status == http.StatusNotFound) {
			continue
		}
		return nil, nil, fmt.Errorf("Artemis Jolokia answer: read %d: status %d: %s", i+1, a.Status, a.Error)
	}
	if len(answers[0].Value) == 0 {
		return nil, nil, fmt.Errorf("Artemis Jolokia answer: no broker MBean")
	}
	counters = map[string]float64{
		"artemis_messages_in_total": 0, "artemis_messages_unrouted_total": 0, "artemis_messages_added_total": 0,
		"artemis_messages_out_total": 0, "artemis_messages_expired_total": 0, "artemis_messages_killed_total": 0,
		"artemis_connections_created_total": 0, "artemis_authentication_failures_total": 0, "artemis_authorization_failures_total": 0,
	}
	gauges = map[string]float64{
		"artemis_messages": 0, "artemis_messages_bytes": 0, "artemis_messages_delivering": 0, "artemis_messages_scheduled": 0,
		"artemis_connections": 0, "artemis_sessions": 0, "artemis_consumers": 0, "artemis_queues": 0, "artemis_addresses": 0,
		"artemis_address_memory_bytes": 0, "artemis_address_memory_max_bytes": 0, "artemis_disk_store_usage_ratio": 0,
		"artemis_addresses_paging": 0, "artemis_pages": 0,
	}
	for _, attrs := range answers[0].Value {
		add := func(m map[string]float64, key, attr string) { m[key] += number(attrs[attr]) }
		add(counters, "artemis_messages_added_total", "TotalMessagesAdded")
		add(counters, "artemis_messages_out_total", "TotalMessagesAcknowledged")
		add(counters, "artemis_connections_created_total", "TotalConnectionCount")
		add(counters, "artemis_authentication_failures_total", "AuthenticationFailureCount")
		add(counters, "artemis_authorization_failures_total", "AuthorizationFailureCount")
		add(gauges, "artemis_messages", "TotalMessageCount")
		add(gauges, "artemis_connections", "ConnectionCount")
		add(gauges, "artemis_sessions", "SessionCount")
		add(gauges, "artemis_consumers", "TotalConsumerCount")
		add(gauges, "artemis_queues", "QueueCount")
		add(gauges, "artemis_addresses", "AddressCount")
		add(gauges, "artemis_address_memory_bytes", "AddressMemoryUsage")
		add(gauges, "artemis_address_memory_max_bytes", "GlobalMaxSize")
		gauges["artemis_disk_store_usage_ratio"] = max(gauges["artemis_disk_store_usage_ratio"], number(attrs["DiskStoreUsage"]))
	}
	for name, attrs := range answers[1].Value {
		if internalAddress(mbeanKey(name, "address")) {
			continue
		}
		routed, unrouted := number(attrs["RoutedMessageCount"]), number(attrs["UnRoutedMessageCount"])
		counters["artemis_messages_in_total"] += routed + unrouted
		counters["artemis_messages_unrouted_total"] += unrouted
		if number(attrs["Paging"]) > 0 {
			gauges["artemis_addresses_paging"]++
		}
		gauges["artemis_pages"] += number(attrs["NumberOfPages"])
	}
	for _, attrs := range answers[2].Value {
		counters["artemis_messages_expired_total"] += number(attrs["MessagesExpired"])
		counters["artemis_messages_killed_total"] += number(attrs["MessagesKilled"])
		gauges["artemis_messages_delivering"] += number(attrs["DeliveringCount"])
		gauges["artemis_messages_scheduled"] += number(attrs["ScheduledCount"])
		gauges["artemis_messages_bytes"] += number(attrs["PersistentSize"])
	}
	return counters, gauges, nil
}

// number is an attribute's value as a number: a JSON number, true as 1;
// 0 for anything else (an attribute the broker lacks, null, a negative
// "unlimited").
func number(v json.RawMessage) float64 {
	if string(v) == "true" {
		return 1
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || f < 0 {
		return 0
	}
	return f
}

// mbeanKey returns the value of key in an MBean's name
// ("org.apache.activemq.artemis:address=\"a,b\",broker=\"0.0.0.0\""),
// unquoted; "" without it.
func mbeanKey(name, key string) string {
	_, props, _ := strings.Cut(name, ":")
	for props != "" {
		k, rest, ok := strings.Cut(props, "=")
		if !ok {
			return ""
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			// A quoted value escapes \, ", * and ? with a backslash, and a
			// new line as \n.
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					if rest[i] == 'n' {
						b.WriteByte('\n')
						continue
					}
				}
				b.WriteByte(rest[i])
			}
			v, rest = b.String(), rest[min(i+1, len(rest)):]
			rest = strings.TrimPrefix(rest, ",")
		} else {
			v, rest, _ = strings.Cut(rest, ",")
		}
		if k == key {
			return v
		}
		props = rest
	}
	return ""
}
