package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// sysCounters and sysGauges are the $SYS topics read (Mosquitto's), by
// the name brokerbench gives them.
var (
	sysCounters = map[string]string{
		"$SYS/broker/bytes/received": "mqtt_bytes_in_total", "$SYS/broker/bytes/sent": "mqtt_bytes_out_total",
		"$SYS/broker/messages/received": "mqtt_packets_in_total", "$SYS/broker/messages/sent": "mqtt_packets_out_total",
		"$SYS/broker/publish/messages/received": "mqtt_publish_in_total", "$SYS/broker/publish/messages/sent": "mqtt_publish_out_total",
		"$SYS/broker/publish/messages/dropped": "mqtt_publish_dropped_total",
	}
	sysGauges = map[string]string{
		// clients/total counts the sessions the server holds, of clients
		// connected or not.
		"$SYS/broker/clients/connected": "mqtt_clients_connected", "$SYS/broker/clients/total": "mqtt_sessions",
		"$SYS/broker/subscriptions/count":  "mqtt_subscriptions",
		"$SYS/broker/store/messages/count": "mqtt_stored_messages", "$SYS/broker/store/messages/bytes": "mqtt_stored_bytes",
		"$SYS/broker/retained messages/count": "mqtt_retained_messages", "$SYS/broker/heap/current": "mqtt_heap_bytes",
	}
)

// ParseSys reads a server's $SYS topics and their values as counters
// and gauges; topics it does not know, or whose value is not a number,
// are left out.
func ParseSys(topics map[string][]byte) (counters, gauges map[string]float64, err error) {
	counters, gauges = map[string]float64{}, map[string]float64{}
	for topic, value := range topics {
		n, err := strconv.ParseFloat(strings.TrimSpace(string(value)), 64)
		if err != nil {
			continue
		}
		if name, ok := sysCounters[topic]; ok {
			counters[name] = n
		} else if name, ok := sysGauges[topic]; ok {
			gauges[name] = n
		}
	}
	if len(counters)+len(gauges) == 0 {
		return nil, nil, errors.New("MQTT $SYS: no topic brokerbench reads")
	}
	return counters, gauges, nil
}

// readSys implements brokermetrics.Reader for an MQTT server at rawURL,
// mqtt://host:port or mqtts://host:port: the values it retains on
// $SYS/broker/#, read over one connection. A secured local server's URL
// (Kind.MetricsURL) names its user and where its password and authority
// are, never the password itself:
// mqtt://USER@host:port?passwordFile=FILE[&caFile=FILE].
func readSys(ctx context.Context, _ *http.Client, rawURL string) (counters, gauges map[string]float64, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("MQTT $SYS: %w", err)
	}
	var opts driver.Options
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return nil, nil, fmt.Errorf("MQTT $SYS at %s: give the password in a file (?passwordFile=FILE), not in the URL", u.Host)
		}
		q := u.Query()
		sec := local.Security{PasswordFile: q.Get("passwordFile")}
		pw, err := sec.Password()
		if err != nil {
			return nil, nil, fmt.Errorf("MQTT $SYS at %s: %w", u.Host, err)
		}
		opts.Credentials = &driver.Credentials{CAFile: q.Get("caFile"), Username: u.User.Username(), Password: pw}
	}
	server := u.Scheme + "://" + u.Host
	opts.Endpoints = []string{server}
	d, err := New(&workload.DriverConfig{Name: "mqtt", Source: server}, opts)
	if err != nil {
		return nil, nil, err
	}
	topics, err := d.(*Driver).retained(ctx, "$SYS/broker/#")
	if err != nil {
		return nil, nil, err
	}
	return ParseSys(topics)
}
