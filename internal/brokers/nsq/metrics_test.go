package nsq

import (
	"strings"
	"testing"
)

// TestParseStats: /stats's topics and channels are summed into counters
// and gauges named as a Prometheus exporter would; what is not JSON is
// an error.
func TestParseStats(t *testing.T) {
	c, g, err := ParseStats(strings.NewReader(`{"version":"1.3.0","health":"OK","topics":[
		{"topic_name":"a","depth":2,"backend_depth":1,"message_count":100,"message_bytes":6400,"channels":[
			{"channel_name":"s1","depth":5,"backend_depth":0,"in_flight_count":3,"deferred_count":0,"message_count":100,"requeue_count":2,"timeout_count":1,"client_count":2},
			{"channel_name":"s2","depth":0,"in_flight_count":1,"message_count":98,"client_count":1}]},
		{"topic_name":"b","message_count":7,"channels":[]}],
		"memory":{"heap_in_use_bytes":4096,"gc_total_runs":9}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c["nsq_topic_messages_total"] != 107 || c["nsq_channel_messages_total"] != 198 || c["nsq_channel_requeued_total"] != 2 ||
		c["nsq_channel_timed_out_total"] != 1 || c["nsq_topic_bytes_total"] != 6400 || c["nsq_gc_runs_total"] != 9 {
		t.Errorf("counters %v", c)
	}
	if g["nsq_topics"] != 2 || g["nsq_channels"] != 2 || g["nsq_channel_in_flight"] != 4 || g["nsq_channel_depth"] != 5 ||
		g["nsq_topic_depth"] != 2 || g["nsq_clients"] != 3 || g["nsq_memory_heap_in_use_bytes"] != 4096 {
		t.Errorf("gauges %v", g)
	}
	if _, _, err := ParseStats(strings.NewReader("<html>")); err == nil {
		t.Error("not JSON: no error")
	}
}

func FuzzParseStats(f *testing.F) {
	f.Add(`{"topics":[{"topic_name":"a","message_count":1,"channels":[{"depth":2}]}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		c, g, err := ParseStats(strings.NewReader(text))
		if err == nil && (c == nil || g == nil) {
			t.Error("no error and nil maps")
		}
	})
}
