// Command bareredis is the ceiling of go-redis for the Redis comparison
// (bench/compare-redis-tools): XADDs to one stream in pipelines of a fixed
// size, one round trip at a time, with nothing measured but the count. It
// prints rate=R: records from the first XADD to the last reply.
//
//	bareredis -addr 127.0.0.1:6379 -stream s -records 1000000 -size 100 -pipeline 100 [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	stream := flag.String("stream", "bareredis", "stream to append to")
	records := flag.Int64("records", 1_000_000, "entries to add")
	size := flag.Int("size", 100, "value size in bytes")
	pipeline := flag.Int("pipeline", 100, "XADDs per round trip")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bareredis:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*addr, *stream, *records, *size, *pipeline); err != nil {
		fmt.Fprintln(os.Stderr, "bareredis:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(addr, stream string, records int64, size, pipeline int) error {
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1})
	defer rdb.Close()
	value := make([]byte, size)
	start := time.Now()
	for sent := int64(0); sent < records; {
		pipe := rdb.Pipeline()
		n := min(int64(pipeline), records-sent)
		for range n {
			pipe.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: []any{"v", value}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		sent += n
	}
	fmt.Printf("records=%d rate=%.0f\n", records, float64(records)/time.Since(start).Seconds())
	return rdb.Del(ctx, stream).Err()
}
