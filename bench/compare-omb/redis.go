package main

import (
	"context"
	"fmt"
	"net"

	goredis "github.com/redis/go-redis/v9"

	"github.com/brokerbench/brokerbench/internal/brokers/redis"
	"github.com/brokerbench/brokerbench/internal/local"
)

func newRedis(port int) *local.Cluster { return redis.NewLocal(port, 1) }

// pointRedisDriver points OMB's Redis driver file at the server:
// redisHost and redisPort become its address's.
func pointRedisDriver(text string, st local.Status) (string, error) {
	host, port, err := net.SplitHostPort(st.Address())
	if err != nil {
		return "", fmt.Errorf("the server's address: %w", err)
	}
	if text, err = setRequired(text, "Redis", "redisHost", host); err != nil {
		return "", err
	}
	return setRequired(text, "Redis", "redisPort", port)
}

const redisCounted = "the entries ever added to the server's streams (XINFO STREAM's entries-added)"

// addedRedis counts the entries ever added to every stream.
func addedRedis(ctx context.Context, st local.Status) (int64, error) {
	rdb := goredis.NewClient(&goredis.Options{Addr: st.Address()})
	defer rdb.Close()
	var n int64
	iter := rdb.ScanType(ctx, 0, "*", 1000, "stream").Iterator()
	for iter.Next(ctx) {
		info, err := rdb.XInfoStream(ctx, iter.Val()).Result()
		if err != nil {
			return 0, fmt.Errorf("count the entries of stream %s: %w", iter.Val(), err)
		}
		n += info.EntriesAdded
	}
	if err := iter.Err(); err != nil {
		return 0, fmt.Errorf("list the runs' streams: %w", err)
	}
	return n, nil
}

// cleanRedis deletes every key.
func cleanRedis(ctx context.Context, st local.Status) error {
	rdb := goredis.NewClient(&goredis.Options{Addr: st.Address()})
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("delete the runs' streams: %w", err)
	}
	return nil
}
