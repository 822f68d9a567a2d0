package nats

import (
	"encoding/json"
	"fmt"
	"io"
)

// varz is what brokerbench reads of a NATS server's /varz.
type varz struct {
	InMsgs        float64 `json:"in_msgs"`
	OutMsgs       float64 `json:"out_msgs"`
	InBytes       float64 `json:"in_bytes"`
	OutBytes      float64 `json:"out_bytes"`
	SlowConsumers float64 `json:"slow_consumers"`
	Connections   float64 `json:"connections"`
	Subscriptions float64 `json:"subscriptions"`
	Mem           float64 `json:"mem"`
	JetStream     struct {
		Stats struct {
			Memory  float64 `json:"memory"`
			Storage float64 `json:"storage"`
			API     struct {
				Total  float64 `json:"total"`
				Errors float64 `json:"errors"`
			} `json:"api"`
		} `json:"stats"`
	} `json:"jetstream"`
}

// ParseVarz reads a NATS server's monitoring endpoint (/varz, JSON) as
// counters and gauges named as a Prometheus exporter would.
func ParseVarz(r io.Reader) (counters, gauges map[string]float64, err error) {
	var v varz
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("NATS /varz: %w", err)
	}
	counters = map[string]float64{
		"nats_messages_in_total": v.InMsgs, "nats_messages_out_total": v.OutMsgs,
		"nats_bytes_in_total": v.InBytes, "nats_bytes_out_total": v.OutBytes,
		"nats_slow_consumers_total": v.SlowConsumers, "nats_jetstream_api_requests_total": v.JetStream.Stats.API.Total,
		"nats_jetstream_api_errors_total": v.JetStream.Stats.API.Errors,
	}
	gauges = map[string]float64{
		"nats_connections": v.Connections, "nats_subscriptions": v.Subscriptions, "nats_memory_bytes": v.Mem,
		"nats_jetstream_memory_bytes": v.JetStream.Stats.Memory, "nats_jetstream_storage_bytes": v.JetStream.Stats.Storage,
	}
	return counters, gauges, nil
}
