package brokermetrics

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// natsVarz is what brokerbench reads of a NATS server's /varz.
type natsVarz struct {
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

// ParseNATSVarz reads a NATS server's monitoring endpoint (/varz, JSON)
// as counters and gauges named as a Prometheus exporter would.
func ParseNATSVarz(r io.Reader) (counters, gauges map[string]float64, err error) {
	var v natsVarz
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

// redisCounters and redisGauges are the fields of Redis's INFO read, by
// the name brokerbench gives them.
var (
	redisCounters = map[string]string{
		"total_commands_processed": "redis_commands_total", "total_net_input_bytes": "redis_bytes_in_total",
		"total_net_output_bytes": "redis_bytes_out_total", "total_connections_received": "redis_connections_received_total",
		"aof_delayed_fsync": "redis_aof_delayed_fsyncs_total",
	}
	redisGauges = map[string]string{
		"connected_clients": "redis_connected_clients", "used_memory": "redis_memory_used_bytes",
		"instantaneous_ops_per_sec": "redis_ops_per_second", "blocked_clients": "redis_blocked_clients",
	}
)

// ParseRedisInfo reads the text of Redis's INFO command as counters and
// gauges; fields it does not know are left out.
func ParseRedisInfo(r io.Reader) (counters, gauges map[string]float64, err error) {
	counters, gauges = map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		if name, ok := redisCounters[k]; ok {
			counters[name] = n
		} else if name, ok := redisGauges[k]; ok {
			gauges[name] = n
		}
	}
	if len(counters)+len(gauges) == 0 {
		return nil, nil, fmt.Errorf("redis INFO: no field brokerbench reads")
	}
	return counters, gauges, sc.Err()
}

func scrapeRedis(ctx context.Context, url string) (counters, gauges map[string]float64, err error) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	opts.MaxRetries, opts.PoolSize = -1, 1
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	info, err := rdb.Info(ctx).Result()
	if err != nil {
		return nil, nil, err
	}
	return ParseRedisInfo(strings.NewReader(info))
}
