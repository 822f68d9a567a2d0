// Command compare-rabbitmq-stream-tools measures brokerbench's RabbitMQ
// streams load generator (driver rabbitmq-stream) side by side with a bare
// rabbitmq-stream-go-client loop (bench/barerabbitmqstream, the client
// library's ceiling), against one local RabbitMQ node it starts itself.
//
// Every tool runs one producer and one consumer in one process, each on
// a connection of its own, on a fresh stream: at most as many messages
// awaiting their publish confirm as brokerbench keeps in flight for the
// size, the client batching 100 at a time, the consumer reading from the
// first offset with 10 initial credits, a fixed record count, flat out.
// The order of the tools rotates every repetition. It reports messages
// per second (by the tool's own clock, and by wall time including
// start-up), the client process's CPU seconds (getrusage of that child
// only, the broker excluded), messages per CPU-second with and without
// start-up, and the ratio brokerbench/bare as min/median/max over the
// repetitions.
//
// RabbitMQ's own stream tool, Stream PerfTest (Java), is published on
// GitHub, not Maven Central, and is not run here. The Go client's
// perfTest runs for a time only, in whole tens of seconds, and counts
// messages sent rather than confirmed, so it cannot be held to a record
// count or to a start-up run of one record; it is not run either.
//
//	go run ./bench/compare-rabbitmq-stream-tools                 # 2M x 100 B, 3 repetitions
//	go run ./bench/compare-rabbitmq-stream-tools -records 500000 -reps 2 -sizes 100,1024
//	go run ./bench/compare-rabbitmq-stream-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
)

func main() {
	toolcompare.Main("compare-rabbitmq-stream-tools", toolcompare.Options{Records: 2_000_000, Sizes: []int{100}, Reps: 3, Port: 29687, Out: "bench/results/compare-rabbitmq-stream-tools.json"}, run)
}

type env struct {
	dir, uri, addr string
	// baseline is the git revision whose brokerbench also runs ("" for
	// none).
	baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-rabbitmq-stream-tools", "barerabbitmqstream", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, stopBroker, err := toolcompare.Up(ctx, rabbitmq.NewLocal(o.Port, 1), dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	addrs := st.Endpoints("stream")
	if len(addrs) == 0 {
		return fmt.Errorf("the local RabbitMQ serves no stream listener")
	}
	e := &env{dir: dir, addr: addrs[0], uri: "rabbitmq-stream://guest:guest@" + addrs[0] + "/%2f", baseline: o.Baseline}

	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

const role = "publish+consume"

func (e *env) tools(size int) ([]toolcompare.Tool, error) {
	wl, err := e.workload(size)
	if err != nil {
		return nil, err
	}
	tools := []toolcompare.Tool{
		{Name: "bare rabbitmq-stream-go-client", Cmd: func(stream string, n int64) []string {
			return []string{filepath.Join(e.dir, "barerabbitmqstream"), "-uri", e.uri, "-stream", stream,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size)}
		}, Rate: toolcompare.KeyRate},
	}
	return append(tools, toolcompare.Brokerbench(e.dir, e.baseline, wl, e.addr, nil, toolcompare.LastDeliveryRate)...), nil
}

// workload writes brokerbench's side: one stream, one producer and one
// consumer, with the driver's defaults (batches of 100, 10 initial
// credits), which the bare loop shares.
func (e *env) workload(size int) (string, error) {
	path := filepath.Join(e.dir, fmt.Sprintf("rabbitmq-stream-%d.yaml", size))
	text := fmt.Sprintf(`name: compare-rabbitmq-stream-%d
topics: 1
partitionsPerTopic: 1
messageSize: %d
producersPerTopic: 1
subscriptionsPerTopic: 1
consumersPerSubscription: 1
rate: 0
warmup: 0s
duration: 10m
driver:
  driver: rabbitmq-stream
`, size, size)
	return path, os.WriteFile(path, []byte(text), 0o644)
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	tools, err := e.tools(size)
	if err != nil {
		return nil, err
	}
	return toolcompare.Sitting(ctx, o, toolcompare.Run, tools, role, size,
		func(rep, i int) string { return fmt.Sprintf("s-%d-%d-%d", size, rep, i) })
}
