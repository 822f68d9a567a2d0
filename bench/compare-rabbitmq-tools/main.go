// Command compare-rabbitmq-tools measures brokerbench's RabbitMQ load
// generator side by side with RabbitMQ's PerfTest and with a bare
// amqp091-go loop (bench/bareamqp, the client library's ceiling), against
// one local RabbitMQ node it starts itself.
//
// Every tool runs one publisher and one consumer in one process on a
// fresh quorum queue: persistent messages, publisher confirms with at most
// 1000 outstanding, prefetch 1000, acknowledgements 50 at a time, a fixed
// record count, flat out. The order of the tools rotates every repetition.
// It reports messages per second (by the tool's own clock, and by wall
// time including start-up), the client process's CPU seconds (getrusage of
// that child only, the broker excluded), messages per CPU-second with and
// without start-up, and the ratios brokerbench/PerfTest and
// brokerbench/bare as min/median/max over the repetitions.
//
//	go run ./bench/compare-rabbitmq-tools                 # 300k x 100 B, 3 repetitions
//	go run ./bench/compare-rabbitmq-tools -records 100000 -reps 2 -sizes 100,1024
//	go run ./bench/compare-rabbitmq-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
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
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/local"
)

// perfTestVersion is the PerfTest release fetched from Maven Central.
const perfTestVersion = "2.22.1"

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "compare-rabbitmq-tools:", err)
	os.Exit(1)
}

func main() {
	toolcompare.Main("compare-rabbitmq-tools", toolcompare.Options{Records: 300_000, Sizes: []int{100}, Reps: 3, Port: 29677, Out: "bench/results/compare-rabbitmq-tools.json"}, run)
}

type env struct {
	dir, uri, addr, perfTestLib string
	// baseline is the git revision whose brokerbench also runs ("" for
	// none).
	baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-rabbitmq-tools", "bareamqp", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lib, err := fetchPerfTest(ctx, filepath.Join(local.DefaultCacheDir(), "perf-test-"+perfTestVersion))
	if err != nil {
		return err
	}
	st, stopBroker, err := toolcompare.Up(ctx, rabbitmq.NewLocal(o.Port, 1), dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	e := &env{dir: dir, addr: st.Address(), uri: "amqp://guest:guest@" + st.Address() + "/%2f", perfTestLib: lib, baseline: o.Baseline}

	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

// fetchPerfTest downloads PerfTest and its dependencies from Maven Central
// into dir, unless there, and returns the directory of the jars.
func fetchPerfTest(ctx context.Context, dir string) (string, error) {
	lib := filepath.Join(dir, "lib")
	if _, err := os.Stat(filepath.Join(lib, "perf-test-"+perfTestVersion+".jar")); err == nil {
		return lib, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	pom := `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>dev.brokerbench</groupId><artifactId>perf-test-dist</artifactId><version>1</version><packaging>pom</packaging>
<dependencies><dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId><version>` + perfTestVersion + `</version></dependency></dependencies>
</project>
`
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", err
	}
	fmt.Printf("fetching RabbitMQ PerfTest %s from Maven Central into %s\n", perfTestVersion, dir)
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "dependency:copy-dependencies", "-DoutputDirectory=lib", "-DincludeScope=runtime")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch PerfTest with Maven (Debian: apt-get install maven): %w\n%s", err, toolcompare.Tail(string(out)))
	}
	return lib, nil
}

const role = "publish+consume"

func (e *env) tools(size int) []toolcompare.Tool {
	wl := e.workload(size)
	tools := []toolcompare.Tool{
		{Name: "rabbitmq PerfTest", Cmd: func(queue string, n int64) []string {
			return []string{"java", "-Xmx1g", "-cp", filepath.Join(e.perfTestLib, "*"), "com.rabbitmq.perf.PerfTest",
				"--uri", e.uri, "--producers", "1", "--consumers", "1", "--queue", queue, "--quorum-queue",
				"--size", strconv.Itoa(size), "--pmessages", strconv.FormatInt(n, 10), "--cmessages", strconv.FormatInt(n, 10),
				"--confirm", "1000", "--qos", "1000", "--multi-ack-every", "50", "--flag", "persistent"}
		}, Rate: perfTestRate},
		{Name: "bare amqp091-go", Cmd: func(queue string, n int64) []string {
			return []string{filepath.Join(e.dir, "bareamqp"), "-uri", e.uri, "-queue", queue,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size)}
		}, Rate: toolcompare.KeyRate},
	}
	return append(tools, toolcompare.Brokerbench(e.dir, e.baseline, wl, e.addr, nil, toolcompare.PublishRate)...)
}

// workload writes brokerbench's side: one quorum queue, one producer and
// one consumer, with the same confirm window, prefetch and acks as the
// others.
func (e *env) workload(size int) string {
	path := filepath.Join(e.dir, fmt.Sprintf("rabbitmq-%d.yaml", size))
	text := fmt.Sprintf(`name: compare-rabbitmq-%d
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
  driver: rabbitmq
  commonConfig: {queueType: QUORUM, messagePersistence: "true"}
  producerConfig: {maxOutstandingConfirms: "1000"}
  consumerConfig: {prefetch: "1000", multipleAckEvery: "50"}
`, size, size)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fatal(err)
	}
	return path
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	tools := e.tools(size)
	return toolcompare.Sitting(ctx, o, toolcompare.Run, tools, role, size,
		func(rep, i int) string { return fmt.Sprintf("q-%d-%d-%d", size, rep, i) })
}

// perfTestRate reads PerfTest's summary "sending rate avg: R msg/s".
func perfTestRate(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		if _, after, ok := strings.Cut(line, "sending rate avg: "); ok {
			return strconv.ParseFloat(strings.Fields(after)[0], 64)
		}
	}
	return 0, errors.New("no 'sending rate avg' in PerfTest's output")
}
