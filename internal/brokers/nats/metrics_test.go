package nats

import (
	"strings"
	"testing"
)

// TestParseVarz: /varz's fields become counters and gauges named as a
// Prometheus exporter would; what is not JSON is an error.
func TestParseVarz(t *testing.T) {
	c, g, err := ParseVarz(strings.NewReader(`{"server_id":"x","in_msgs":12,"out_msgs":10,"in_bytes":1200,"connections":3,"mem":5000000,
		"jetstream":{"stats":{"storage":4096,"api":{"total":7,"errors":1}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c["nats_messages_in_total"] != 12 || c["nats_jetstream_api_errors_total"] != 1 || g["nats_connections"] != 3 || g["nats_jetstream_storage_bytes"] != 4096 {
		t.Errorf("varz: counters %v gauges %v", c, g)
	}
	if _, _, err := ParseVarz(strings.NewReader("<html>")); err == nil {
		t.Error("not JSON: no error")
	}
}

func FuzzParseVarz(f *testing.F) {
	f.Add(`{"in_msgs":1,"jetstream":{"stats":{"storage":2}}}`)
	f.Fuzz(func(t *testing.T, text string) {
		c, g, err := ParseVarz(strings.NewReader(text))
		if err == nil && (c == nil || g == nil) {
			t.Error("no error and nil maps")
		}
	})
}
