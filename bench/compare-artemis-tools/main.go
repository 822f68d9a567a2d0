// Command compare-artemis-tools measures brokerbench's ActiveMQ Artemis
// load generator side by side with Artemis' own perf client ('artemis
// perf client', over AMQP) and with a bare go-amqp loop
// (bench/bareamqp10, the client library's ceiling), against one local
// Artemis broker it starts itself.
//
// Every tool runs one producer and one consumer in one process, each on
// a connection of its own: durable messages, at most 1000 awaiting the
// broker's settlement, a fixed record count, flat out. The order of the
// tools rotates every repetition. It reports messages per second (by the
// tool's own clock, and by wall time including start-up), the client
// process's CPU seconds (getrusage of that child only, the broker
// excluded), messages per CPU-second with and without start-up, and the
// ratios brokerbench/perf client and brokerbench/bare as min/median/max
// over the repetitions.
//
//	go run ./bench/compare-artemis-tools                 # 100k x 100 B, 3 repetitions
//	go run ./bench/compare-artemis-tools -records 50000 -reps 2 -sizes 100,1024
//	go run ./bench/compare-artemis-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/artemis"
	"github.com/brokerbench/brokerbench/internal/local"
)

func main() {
	toolcompare.Main("compare-artemis-tools", toolcompare.Options{Records: 100_000, Sizes: []int{100}, Reps: 3, Port: 29617, Out: "bench/results/compare-artemis-tools.json"}, run)
}

type env struct {
	dir, addr, artemisHome string
	// baseline is the git revision whose brokerbench also runs ("" for
	// none).
	baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-artemis-tools", "bareamqp10", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c := artemis.NewLocal(o.Port, 1)
	st, stopBroker, err := toolcompare.Up(ctx, c, dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	e := &env{dir: dir, addr: st.Address(), artemisHome: filepath.Join(local.DefaultCacheDir(), "artemis-"+artemis.Version, "apache-artemis-"+artemis.Version), baseline: o.Baseline}

	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

const role = "produce+consume"

func (e *env) tools(size int) []toolcompare.Tool {
	wl := e.workload(size)
	report := filepath.Join(e.dir, "perf.json")
	tools := []toolcompare.Tool{
		{Name: "artemis perf client", Cmd: func(queue string, n int64) []string {
			return []string{filepath.Join(e.artemisHome, "bin", "artemis"), "perf", "client", "--url", "tcp://" + e.addr, "--protocol", "AMQP",
				"--persistent", "--message-count", strconv.FormatInt(n, 10), "--message-size", strconv.Itoa(size), "--max-pending", "1000",
				"--json", report, "queue://" + queue}
		}, Rate: func(string) (float64, error) { return perfClientRate(report) }},
		{Name: "bare go-amqp", Cmd: func(queue string, n int64) []string {
			return []string{filepath.Join(e.dir, "bareamqp10"), "-addr", e.addr, "-queue", queue,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size)}
		}, Rate: toolcompare.KeyRate},
	}
	return append(tools, toolcompare.Brokerbench(e.dir, e.baseline, wl, e.addr, nil, toolcompare.PublishRate)...)
}

// workload writes brokerbench's side: one address with one queue, one
// producer and one consumer, durable messages, the same credit as the
// others.
func (e *env) workload(size int) string {
	path := filepath.Join(e.dir, fmt.Sprintf("artemis-%d.yaml", size))
	text := fmt.Sprintf(`name: compare-artemis-%d
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
  driver: artemis
  consumerConfig: {credit: "1000"}
`, size, size)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "compare-artemis-tools:", err)
		os.Exit(1)
	}
	return path
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	tools := e.tools(size)
	return toolcompare.Sitting(ctx, o, toolcompare.Run, tools, role, size,
		func(rep, i int) string { return fmt.Sprintf("q-%d-%d-%d", size, rep, i) })
}

// perfSample is what is read of a sample of the perf client's JSON
// report: one per second of the run, then a summary.
type perfSample struct {
	SampleType    string `json:"sampleType"`
	Time          int64  `json:"time"` // milliseconds since the epoch, at the sample's end
	TotalReceived int64  `json:"totalReceived"`
}

// perfClientRate reads the perf client's report: the messages it
// received over the span of its samples, the first counted as a whole
// second.
func perfClientRate(path string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var samples []perfSample
	if err := json.Unmarshal(data, &samples); err != nil {
		return 0, fmt.Errorf("perf client report %s: %w", path, err)
	}
	if len(samples) < 2 || samples[len(samples)-1].SampleType != "summary" {
		return 0, errors.New("the perf client's report has no interval and summary")
	}
	last := samples[len(samples)-1]
	span := float64(last.Time-samples[0].Time)/1000 + 1
	return float64(last.TotalReceived) / span, nil
}
