// Command compare-rabbitmq-amqp10-tools measures brokerbench's RabbitMQ
// AMQP 1.0 driver (rabbitmq-amqp10) side by side with a bare go-amqp
// loop (bench/bareamqp10, the client library's ceiling), against one
// local RabbitMQ 3 node it starts itself (Debian's package, with the
// rabbitmq_amqp1_0 plugin). No AMQP 1.0 benchmark tool of RabbitMQ's
// installs here: PerfTest speaks AMQP 0-9-1 (bench/compare-rabbitmq-tools
// compares it with the rabbitmq driver), and omq, RabbitMQ's AMQP 1.0
// load generator, is not served by the Go module proxy.
//
// Both tools run one producer and one consumer in one process, each on
// a connection of its own, on the same topology, made by brokerbench's
// rabbitmq driver over AMQP 0-9-1 (for the bare loop, by this command
// before its run): a durable direct exchange, and a durable classic
// queue (the driver's default queue type) bound to it with the routing
// key "0". Messages go over AMQP 1.0 to /exchange/X/0 and come from
// /amq/queue/Q (addressFormat v1, RabbitMQ 3's): durable, sent
// unsettled with as many awaiting the broker's settlement as
// brokerbench's runner keeps in flight (runner.InFlightWindow: 16,384
// at 100 B and at 1 KB), received with a credit of 1,000 granted again
// whole once spent (the driver's way on RabbitMQ 3, and the bare loop's
// -credit-when-spent: see bench/bareamqp10), each message accepted; a
// fixed record count, flat out, or with -rate R both at R messages a
// second (brokerbench's workload rate; the bare loop's -rate), for the
// cost of the same exchange at one rate where flat out the two tools
// run at different rates. The order of the tools rotates every
// repetition. It reports messages per second (by the tool's own clock:
// the records over the time from the first send to the last delivery,
// for brokerbench to the end of the last second with a delivery; and
// by wall time including start-up), the client process's CPU
// seconds (getrusage of that child only, the broker excluded), messages
// per CPU-second with and without start-up, and the ratio
// brokerbench/bare as min/median/max over the repetitions.
//
//	go run ./bench/compare-rabbitmq-amqp10-tools                 # 100k x 100 B, 3 repetitions
//	go run ./bench/compare-rabbitmq-amqp10-tools -reps 3 -sizes 100,1024
//	go run ./bench/compare-rabbitmq-amqp10-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
//	go run ./bench/compare-rabbitmq-amqp10-tools -rate 5000       # both tools at 5,000 msg/s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// rate is the messages per second both tools keep to (-rate; 0: flat out).
var rate = flag.Int("rate", 0, "messages per second both tools keep to (0: flat out)")

func main() {
	toolcompare.Main("compare-rabbitmq-amqp10-tools", toolcompare.Options{Records: 100_000, Sizes: []int{100}, Reps: 3, Port: 29671, Out: "bench/results/compare-rabbitmq-amqp10-tools.json"}, run)
}

// credit is every consumer's link credit.
const credit = 1000

type env struct {
	dir, addr string
	// topology makes the bare loop's exchange and queue as brokerbench's
	// driver makes its own.
	topology *rabbitmq.Driver
	// baseline is the git revision whose brokerbench also runs ("" for
	// none).
	baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	if *rate < 0 {
		return fmt.Errorf("-rate %d: want messages per second, 0 or more (0: flat out)", *rate)
	}
	dir, err := toolcompare.Workdir(ctx, "compare-rabbitmq-amqp10-tools", "bareamqp10", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, stopBroker, err := toolcompare.Up(ctx, rabbitmq.NewLocal(o.Port, 1), dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	td, err := rabbitmq.New(&workload.DriverConfig{Name: "rabbitmq", Source: "compare-rabbitmq-amqp10-tools",
		Common: workload.Properties{{Key: "queueType", Value: "CLASSIC"}}}, driver.Options{Endpoints: []string{st.Address()}})
	if err != nil {
		return err
	}
	defer td.Close()
	e := &env{dir: dir, addr: st.Address(), topology: td.(*rabbitmq.Driver), baseline: o.Baseline}

	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

const role = "produce+consume"

// bareTool is the name of the bare loop, which runs on a topic (an
// exchange and its queue) prepareBare made.
const bareTool = "bare go-amqp"

func (e *env) tools(size int) []toolcompare.Tool {
	wl := e.workload(size)
	tools := []toolcompare.Tool{
		{Name: bareTool, Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.dir, "bareamqp10"), "-addr", e.addr, "-user", "guest", "-password", "guest",
				"-target", "/exchange/" + topic + "/0", "-source", "/amq/queue/" + bareQueue(topic),
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size),
				"-pending", strconv.Itoa(runner.InFlightWindow(size, 1, runner.DefaultMaxInFlightBytes)),
				"-credit", strconv.Itoa(credit), "-credit-when-spent", "-rate", strconv.Itoa(*rate)}
		}, Rate: toolcompare.KeyRate},
	}
	return append(tools, toolcompare.Brokerbench(e.dir, e.baseline, wl, e.addr, nil, toolcompare.LastDeliveryRate)...)
}

// bareQueue is the queue the bare loop consumes from: that of topic's
// one subscription, named as the topic, as the rabbitmq driver names a
// subscription's queue of partition 0.
func bareQueue(topic string) string { return topic + ".0" }

// workload writes brokerbench's side: one topic with one subscription
// (a classic queue, the driver's default), one producer and one
// consumer, durable messages, the same credit and rate as the bare loop.
func (e *env) workload(size int) string {
	path := filepath.Join(e.dir, fmt.Sprintf("rabbitmq-amqp10-%d.yaml", size))
	text := fmt.Sprintf(`name: compare-rabbitmq-amqp10-%d
topics: 1
partitionsPerTopic: 1
messageSize: %d
producersPerTopic: 1
subscriptionsPerTopic: 1
consumersPerSubscription: 1
rate: %d
warmup: 0s
duration: 10m
driver:
  driver: rabbitmq-amqp10
  commonConfig: {queueType: CLASSIC, messagePersistence: "true", addressFormat: v1}
  consumerConfig: {credit: "%d"}
`, size, size, *rate, credit)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "compare-rabbitmq-amqp10-tools:", err)
		os.Exit(1)
	}
	return path
}

// runTool runs t on topic; for the bare loop, topic's exchange and its
// queue are made before the run (outside the loop's process, as
// brokerbench makes its own inside its) and deleted after it, as
// brokerbench deletes its own.
func (e *env) runTool(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, topic string) (toolcompare.Measurement, error) {
	if t.Name != bareTool {
		return toolcompare.Run(ctx, t, role, size, records, rep, topic)
	}
	if err := e.topology.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		return toolcompare.Measurement{}, fmt.Errorf("topic %s for the bare loop: %w", topic, err)
	}
	queues, err := e.topology.Subscribe(ctx, topic, topic)
	if err == nil && (len(queues) != 1 || queues[0] != bareQueue(topic)) {
		err = fmt.Errorf("the driver made queues %v, not %s", queues, bareQueue(topic))
	}
	if err != nil {
		return toolcompare.Measurement{}, fmt.Errorf("subscription of %s for the bare loop: %w", topic, err)
	}
	m, err := toolcompare.Run(ctx, t, role, size, records, rep, topic)
	return m, errors.Join(err, e.topology.DeleteTopic(ctx, topic))
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	tools := e.tools(size)
	return toolcompare.Sitting(ctx, o, e.runTool, tools, role, size,
		func(rep, i int) string { return fmt.Sprintf("q-%d-%d-%d", size, rep, i) })
}
