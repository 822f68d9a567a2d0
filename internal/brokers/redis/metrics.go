package redis

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// infoCounters and infoGauges are the fields of Redis's INFO read, by
// the name brokerbench gives them.
var (
	infoCounters = map[string]string{
		"total_commands_processed": "redis_commands_total", "total_net_input_bytes": "redis_bytes_in_total",
		"total_net_output_bytes": "redis_bytes_out_total", "total_connections_received": "redis_connections_received_total",
		"aof_delayed_fsync": "redis_aof_delayed_fsyncs_total",
	}
	infoGauges = map[string]string{
		"connected_clients": "redis_connected_clients", "used_memory": "redis_memory_used_bytes",
		"instantaneous_ops_per_sec": "redis_ops_per_second", "blocked_clients": "redis_blocked_clients",
	}
)

// ParseInfo reads the text of Redis's INFO command as counters and
// gauges; fields it does not know are left out.
func ParseInfo(r io.Reader) (counters, gauges map[string]float64, err error) {
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
		if name, ok := infoCounters[k]; ok {
			counters[name] = n
		} else if name, ok := infoGauges[k]; ok {
			gauges[name] = n
		}
	}
	if len(counters)+len(gauges) == 0 {
		return nil, nil, errors.New("redis INFO: no field brokerbench reads")
	}
	return counters, gauges, sc.Err()
}

// readInfo implements brokermetrics.Reader for a Redis server at url
// (redis://host:port): its INFO, read over one connection.
func readInfo(ctx context.Context, _ *http.Client, url string) (counters, gauges map[string]float64, err error) {
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
	return ParseInfo(strings.NewReader(info))
}
