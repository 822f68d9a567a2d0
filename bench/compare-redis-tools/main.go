// Command compare-redis-tools measures brokerbench's Redis Streams
// producer side by side with redis-benchmark (Debian's redis-tools) and
// with a bare go-redis loop (bench/bareredis, the client library's
// ceiling), against one local Redis server it starts itself.
//
// Every tool appends a fixed number of entries with XADD to one stream,
// in pipelines of 100 over one connection, flat out; the order of the
// tools rotates every repetition. redis-benchmark has no consumer-group
// mode, so only producing is compared. It reports messages per second
// (by the tool's own clock, and by wall time including start-up), the
// client process's CPU seconds (getrusage of that child only, the server
// excluded), messages per CPU-second with and without start-up, and the
// ratios brokerbench/redis-benchmark and brokerbench/bare as
// min/median/max over the repetitions.
//
//	go run ./bench/compare-redis-tools                 # 1M x 100 B, 3 repetitions
//	go run ./bench/compare-redis-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/redis"
	"github.com/brokerbench/brokerbench/internal/results"
)

func main() {
	toolcompare.Main("compare-redis-tools", toolcompare.Options{Records: 1_000_000, Sizes: []int{100}, Reps: 3, Port: 29380, Out: "bench/results/compare-redis-tools.json"}, run)
}

const role = "producer"

func run(ctx context.Context, o toolcompare.Options) error {
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return errors.New("redis-benchmark is not installed (Debian: apt-get install redis-tools)")
	}
	dir, err := toolcompare.Workdir(ctx, "compare-redis-tools", "bareredis", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, stopBroker, err := toolcompare.Up(ctx, redis.NewLocal(o.Port, 1), dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return compare(ctx, o, dir, bench, st.Address(), size)
	})
}

// compare runs every tool at one message size.
func compare(ctx context.Context, o toolcompare.Options, dir, bench, addr string, size int) ([]toolcompare.Measurement, error) {
	host, port, _ := strings.Cut(addr, ":")
	wl := filepath.Join(dir, fmt.Sprintf("producer-%d.yaml", size))
	if err := os.WriteFile(wl, []byte(fmt.Sprintf("name: compare-redis-%d\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: %d\nproducersPerTopic: 1\nsubscriptionsPerTopic: 0\nrate: 0\nwarmup: 0s\nduration: 10m\n"+
		"driver:\n  driver: redis\n  producerConfig: {maxPipeline: \"100\"}\n", size, size)), 0o644); err != nil {
		return nil, err
	}
	value := strings.Repeat("x", size)
	tools := []toolcompare.Tool{
		{Name: "redis-benchmark", Cmd: func(stream string, n int64) []string {
			return []string{bench, "-h", host, "-p", port, "-c", "1", "-P", "100", "-n", strconv.FormatInt(n, 10), "--csv", "XADD", stream, "*", "v", value}
		}, Rate: redisBenchmarkRate},
		brokerbench("brokerbench", dir, "brokerbench", wl, addr),
		{Name: "bare go-redis", Cmd: func(stream string, n int64) []string {
			return []string{filepath.Join(dir, "bareredis"), "-addr", addr, "-stream", stream,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size)}
		}, Rate: toolcompare.KeyRate},
	}
	peers := []string{"redis-benchmark", "bare go-redis"}
	if o.Baseline != "" {
		tools = append(tools, brokerbench(toolcompare.BaselineTool(o.Baseline), dir, "brokerbench-baseline", wl, addr))
		peers = append(peers, toolcompare.BaselineTool(o.Baseline))
	}
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	ms, err := toolcompare.Rounds(ctx, toolcompare.Run, tools, role, size, o.Records, o.Reps,
		func(rep, i int) string { return fmt.Sprintf("s-%d-%d-%d", size, rep, i) })
	if err == nil {
		toolcompare.Report(ms, toolcompare.Side{Role: role, Tools: tools, Peers: peers})
	}
	return ms, err
}

// brokerbench is the tool that runs the brokerbench binary dir/bin on
// workload wl, reading its publish rate from its results file.
func brokerbench(name, dir, bin, wl, addr string) toolcompare.Tool {
	out := filepath.Join(dir, bin+".json")
	return toolcompare.Tool{Name: name, Cmd: func(_ string, n int64) []string {
		return []string{filepath.Join(dir, bin), "run", wl, "--broker", addr,
			"--messages", strconv.FormatInt(n, 10), "--quiet", "-o", out}
	}, Rate: func(string) (float64, error) {
		res, err := results.Read(out)
		if err != nil {
			return 0, err
		}
		return res.Measured.PublishRate, nil
	}, Measured: toolcompare.BrokerbenchVerdicts}
}

// redisBenchmarkRate reads the requests per second from redis-benchmark's
// CSV line ("test","rps",...).
func redisBenchmarkRate(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 2 && strings.HasPrefix(f[0], `"XADD`) {
			return strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		}
	}
	return 0, errors.New("no XADD line in redis-benchmark's CSV output")
}
