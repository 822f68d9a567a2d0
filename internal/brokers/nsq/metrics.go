package nsq

import (
	"encoding/json"
	"fmt"
	"io"
)

// stats is what brokerbench reads of nsqd's /stats?format=json.
type stats struct {
	Topics []struct {
		Name         string  `json:"topic_name"`
		Depth        float64 `json:"depth"`
		BackendDepth float64 `json:"backend_depth"`
		MessageCount int64   `json:"message_count"`
		MessageBytes float64 `json:"message_bytes"`
		Channels     []struct {
			Depth         float64 `json:"depth"`
			BackendDepth  float64 `json:"backend_depth"`
			InFlightCount float64 `json:"in_flight_count"`
			DeferredCount float64 `json:"deferred_count"`
			MessageCount  float64 `json:"message_count"`
			RequeueCount  float64 `json:"requeue_count"`
			TimeoutCount  float64 `json:"timeout_count"`
			ClientCount   float64 `json:"client_count"`
		} `json:"channels"`
	} `json:"topics"`
	Memory struct {
		HeapInUseBytes float64 `json:"heap_in_use_bytes"`
		GCTotalRuns    float64 `json:"gc_total_runs"`
	} `json:"memory"`
}

// ParseStats reads nsqd's /stats?format=json as counters and gauges named
// as a Prometheus exporter would, each the sum over the node's topics or
// channels: messages published to topics and sent by channels, requeued
// and timed out; messages waiting in memory and on disk, in flight and
// deferred.
func ParseStats(r io.Reader) (counters, gauges map[string]float64, err error) {
	var s stats
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, nil, fmt.Errorf("nsqd /stats: %w", err)
	}
	counters = map[string]float64{
		"nsq_topic_messages_total": 0, "nsq_topic_bytes_total": 0, "nsq_channel_messages_total": 0,
		"nsq_channel_requeued_total": 0, "nsq_channel_timed_out_total": 0, "nsq_gc_runs_total": s.Memory.GCTotalRuns,
	}
	gauges = map[string]float64{
		"nsq_topics": float64(len(s.Topics)), "nsq_channels": 0, "nsq_clients": 0,
		"nsq_topic_depth": 0, "nsq_topic_backend_depth": 0, "nsq_channel_depth": 0, "nsq_channel_backend_depth": 0,
		"nsq_channel_in_flight": 0, "nsq_channel_deferred": 0, "nsq_memory_heap_in_use_bytes": s.Memory.HeapInUseBytes,
	}
	for _, t := range s.Topics {
		counters["nsq_topic_messages_total"] += float64(t.MessageCount)
		counters["nsq_topic_bytes_total"] += t.MessageBytes
		gauges["nsq_topic_depth"] += t.Depth
		gauges["nsq_topic_backend_depth"] += t.BackendDepth
		gauges["nsq_channels"] += float64(len(t.Channels))
		for _, c := range t.Channels {
			counters["nsq_channel_messages_total"] += c.MessageCount
			counters["nsq_channel_requeued_total"] += c.RequeueCount
			counters["nsq_channel_timed_out_total"] += c.TimeoutCount
			gauges["nsq_channel_depth"] += c.Depth
			gauges["nsq_channel_backend_depth"] += c.BackendDepth
			gauges["nsq_channel_in_flight"] += c.InFlightCount
			gauges["nsq_channel_deferred"] += c.DeferredCount
			gauges["nsq_clients"] += c.ClientCount
		}
	}
	return counters, gauges, nil
}
