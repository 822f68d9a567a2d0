package mqtt

import (
	"os"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

func props(kv ...string) workload.Properties {
	var p workload.Properties
	for i := 0; i+1 < len(kv); i += 2 {
		p = append(p, workload.Property{Key: kv[i], Value: kv[i+1], File: "d.yaml", Line: 3})
	}
	return p
}

// TestSettings: every setting is read, checked and located.
func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		name               string
		common, prod, cons workload.Properties
		endpoints          []string
		check              func(t *testing.T, c *config)
		err                string // "": valid
	}{
		// The defaults: QoS 1, a clean session, OMB's receive maximum.
		{name: "defaults", check: func(t *testing.T, c *config) {
			if c.addr != "127.0.0.1:1883" || c.qos != 1 || !c.cleanSession || c.receiveMaximum != 256 || c.tls != nil {
				t.Errorf("%+v", c)
			}
		}},
		// OMB's client.qos sets the QoS; acks and qos are shown alike.
		{name: "common qos", common: props("qos", "2"), check: func(t *testing.T, c *config) {
			if c.qos != 2 || c.effective["producer"].Map()["acks"].Value != "2" {
				t.Errorf("qos %d, effective %v", c.qos, c.effective["producer"])
			}
		}},
		// acks, brokerbench's name, overrides the common qos.
		{name: "acks", common: props("qos", "2"), prod: props("acks", "0"), check: func(t *testing.T, c *config) {
			if c.qos != 0 {
				t.Errorf("qos %d", c.qos)
			}
		}},
		// qos and acks that disagree are refused.
		{name: "acks and qos differ", prod: props("acks", "0", "qos", "1"), err: "set one of them"},
		// Kafka's acks levels are not QoS levels.
		{name: "acks all", prod: props("acks", "all"), err: `d.yaml:3: field "producerConfig acks": is an MQTT QoS level`},
		// ssl:// turns TLS on, on MQTT's TLS port.
		{name: "tls by scheme", common: props("serverUri", "ssl://broker.example"), check: func(t *testing.T, c *config) {
			if c.tls == nil || c.addr != "broker.example:8883" {
				t.Errorf("tls %v, addr %s", c.tls != nil, c.addr)
			}
		}},
		// --broker replaces serverUri.
		{name: "endpoint", endpoints: []string{"10.0.0.1:1884"}, check: func(t *testing.T, c *config) {
			if c.addr != "10.0.0.1:1884" {
				t.Errorf("addr %s", c.addr)
			}
		}},
		// One server only.
		{name: "two endpoints", endpoints: []string{"a:1", "b:1"}, err: "connects to one server"},
		// OMB's Java name of the session expiry wins when given.
		{name: "session expiry", cons: props("cleanSession", "false", "sessionExpiryInterval", "60"), check: func(t *testing.T, c *config) {
			if c.cleanSession || c.sessionExpiry != 60 {
				t.Errorf("clean %v, expiry %d", c.cleanSession, c.sessionExpiry)
			}
		}},
		// MQTT's receive maximum is 16 bits.
		{name: "receive maximum", cons: props("receiveMaximum", "70000"), err: "at most 65535"},
		// A wildcard in the topic prefix is refused.
		{name: "prefix wildcard", common: props("topicPrefix", "a/#"), err: "no wildcard"},
		// A misspelled setting is refused with a suggestion.
		{name: "misspelled", prod: props("qso", "1"), err: `did you mean "qos"`},
		// The password never shows.
		{name: "password", common: props("username", "u", "password", "secret"), check: func(t *testing.T, c *config) {
			if v := c.effective["common"].Map()["password"].Value; v != "(set)" {
				t.Errorf("password shown as %q", v)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(&workload.DriverConfig{Name: "mqtt", Source: "d.yaml", Common: tc.common, Producer: tc.prod, Consumer: tc.cons}, tc.endpoints, nil)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one with %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.check != nil:
				tc.check(t, c)
			}
		})
	}
}

// TestOMBSettings: OMB's mqtt5.yaml, as OMB ships it, maps its client
// section onto commonConfig and its consumer section onto
// consumerConfig.
func TestOMBSettings(t *testing.T) {
	data, err := os.ReadFile("testdata/mqtt5.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := workload.ParseDriver("mqtt5.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseConfig(dc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "localhost:1883" || c.topicPrefix != "benchmark" || c.qos != 1 || !c.cleanSession || c.sessionExpiry != 259200 || c.receiveMaximum != 256 {
		t.Errorf("%+v", c)
	}
	// Without topicPrefix, an OMB file gets OMB's default; a file of
	// brokerbench's format, none.
	dc, err = workload.ParseDriver("m.yaml", []byte("name: MQTT\ndriverClass: io.openmessaging.benchmark.driver.mqtt5.MqttBenchmarkDriver\nclient:\n  serverUri: tcp://localhost:1883\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := parseConfig(dc, nil, nil); err != nil || c.topicPrefix != "benchmark" {
		t.Errorf("OMB's file without topicPrefix: %+v, %v; want OMB's default prefix", c, err)
	}
	if c, err := parseConfig(&workload.DriverConfig{Name: "mqtt", Source: "n.yaml"}, nil, nil); err != nil || c.topicPrefix != "" {
		t.Errorf("brokerbench's format without topicPrefix: %+v, %v; want none", c, err)
	}
}

// TestParseServerURI: the forms a server is given in.
func TestParseServerURI(t *testing.T) {
	for _, tc := range []struct {
		uri, addr string
		tls       bool
		err       string
	}{
		{uri: "tcp://localhost:1883", addr: "localhost:1883"},
		{uri: "mqtt://h", addr: "h:1883"},
		{uri: "mqtts://h", addr: "h:8883", tls: true},
		{uri: "h:1999", addr: "h:1999"},
		{uri: "http://h:1", err: "scheme"},
		{uri: "tcp://h:1/x", err: "not a path"},
		{uri: "tcp://h:99999", err: "not a port"},
		{uri: "tcp://:1", err: "no host"},
		{uri: "[::1]", addr: "[::1]:1883"}, // IPv6 without a port
		{uri: "ssl://[::1]", addr: "[::1]:8883", tls: true},
		{uri: "[]", err: "no host"}, // brackets around nothing
		{uri: "a]b", err: "no host"},
	} {
		addr, tls, err := ParseServerURI(tc.uri)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.uri, err, tc.err)
			}
			continue
		}
		if err != nil || addr != tc.addr || tls != tc.tls {
			t.Errorf("%s: %s, %v, %v; want %s, %v", tc.uri, addr, tls, err, tc.addr, tc.tls)
		}
	}
}

// FuzzParseServerURI: any text gives an address that splits into a host
// and a port, or an error.
func FuzzParseServerURI(f *testing.F) {
	for _, s := range []string{"tcp://localhost:1883", "mqtts://h", "h:1", "::1", "ssl://[::1]:8883", "[]", "[::1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		addr, _, err := ParseServerURI(uri)
		if err != nil {
			return
		}
		if _, _, err := ParseServerURI(addr); err != nil {
			t.Errorf("%q gave %q, which does not parse: %v", uri, addr, err)
		}
	})
}

// TestNames: topic and subscription names MQTT cannot hold are refused.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slash bool // a topic's may hold levels; a share name's may not
		ok    bool
	}{
		{"bb-1", true, true},
		{"a/b", true, true},
		{"a/b", false, false},
		{"a+", true, false},
		{"#", true, false},
		{"$SYS", true, false},
		{"", true, false},
	} {
		if err := checkName("name", tc.name, tc.slash); (err == nil) != tc.ok {
			t.Errorf("%q (levels %v): %v", tc.name, tc.slash, err)
		}
	}
}
