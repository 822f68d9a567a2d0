// Command compare-rocketmq-tools measures brokerbench's RocketMQ 5 load
// generator side by side with a bare rocketmq-clients Go loop
// (bench/barerocketmq, the client library's ceiling) and, given a checkout
// of RocketMQ's sources (-rocketmq-src), with RocketMQ's own benchmark
// producer (org.apache.rocketmq.example.benchmark.Producer of
// rocketmq-example, which Maven Central does not carry: its two source
// files are compiled with javac against the broker's jars), against one
// local RocketMQ node it starts as 'brokerbench local up rocketmq' does.
//
// brokerbench and the bare loop go through the proxy's gRPC endpoint;
// RocketMQ's benchmark producer is a remoting client (DefaultMQProducer)
// that asks the name server for the route and sends to the broker
// directly, past the proxy. Every run uses a fresh topic of 8 queues
// (RocketMQ's default), flat out; the order of the tools rotates every
// repetition. The Go clients wait 30 s for the proxy's answers, and the
// proxy is warmed up once, unmeasured, before the first run. Two sides:
//
//   - producer: brokerbench producer-only and barerocketmq
//     -consume=false, at most 1000 sends in calls to the proxy (the
//     driver's maxInFlightRequests); the benchmark producer with its
//     default of 64 threads each sending synchronously;
//   - publish+consume: one producer and one simple consumer in one
//     process (32 receive loops of batches of 32, the driver's defaults),
//     brokerbench and barerocketmq; the rate is the records from the
//     first send to the last delivery. RocketMQ's benchmark consumer is
//     not among them: it runs until stopped, with no record count.
//
// It reports messages per second (by the tool's own clock, and by wall
// time including start-up), the client process's CPU seconds (getrusage
// of that child only, the broker excluded), messages per CPU-second with
// and without start-up, and brokerbench's ratios to the others as
// min/median/max over the repetitions. With -pprof DIR, every run of
// brokerbench and of the bare loop writes a CPU profile there.
//
//	go run ./bench/compare-rocketmq-tools                             # 100k x 100 B, 3 repetitions, no RocketMQ tool
//	go run ./bench/compare-rocketmq-tools -rocketmq-src ../rocketmq   # a checkout at rocketmq-all-5.3.3
//	go run ./bench/compare-rocketmq-tools -baseline HEAD~1            # and brokerbench as it was, in the same sitting
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/rocketmq"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

const (
	perfTool = "RocketMQ benchmark Producer"
	bare     = "bare rocketmq-clients"
	// queues is every run's topic's queue count.
	queues = 8
	// requestTimeout and requestTimeoutMs are how long the Go clients
	// wait for the proxy's answer to a call: not the driver's 3 s, which
	// calls to a proxy on a busy shared machine exceed, failing the run.
	requestTimeout, requestTimeoutMs = "30s", 30000
)

var (
	source      = flag.String("rocketmq-src", "", "checkout of RocketMQ's source repository (https://github.com/apache/rocketmq) at the broker's release, tag rocketmq-all-"+rocketmq.Version+"; without it RocketMQ's benchmark producer is left out")
	perfThreads = flag.Int("perf-threads", 64, "threads of RocketMQ's benchmark producer, each sending synchronously (its -w; its default)")
	profiles    = flag.String("pprof", "", "write CPU profiles of every brokerbench run (--pprof) and bare loop run (-cpuprofile) under this directory, named after the run's topic")
)

func main() {
	toolcompare.Main("compare-rocketmq-tools", toolcompare.Options{Records: 100_000, Sizes: []int{100}, Reps: 3, Port: 29881, Out: "bench/results/compare-rocketmq-tools.json"}, run)
}

type env struct {
	dir, proxy, namesrv, baseline string
	// perf is the benchmark producer's script ("": left out).
	perf string
	// topics creates each run's topic.
	topics driver.Driver
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-rocketmq-tools", "barerocketmq", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c := rocketmq.NewLocal(o.Port, 1)
	st, stopBroker, err := toolcompare.Up(ctx, c, dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	e := &env{dir: dir, baseline: o.Baseline}
	for _, n := range st.Nodes {
		if p, ok := n.Ports["client"]; ok {
			e.proxy = net.JoinHostPort(n.Host, strconv.Itoa(p))
		}
		if p, ok := n.Ports["namesrv"]; ok {
			e.namesrv = net.JoinHostPort(n.Host, strconv.Itoa(p))
		}
	}
	if e.topics, err = rocketmq.New(&workload.DriverConfig{Name: "rocketmq", Source: "compare-rocketmq-tools"}, driver.Options{Endpoints: []string{e.proxy, "namesrv://" + e.namesrv}}); err != nil {
		return err
	}
	defer e.topics.Close()
	if *source == "" {
		fmt.Printf("no -rocketmq-src: %s left out (rocketmq-example is not on Maven Central; it is compiled from a checkout of RocketMQ's sources)\n", perfTool)
	} else if e.perf, err = e.buildPerf(ctx, *source, filepath.Join(c.CacheDir, "rocketmq-"+rocketmq.Version, "lib")); err != nil {
		return err
	}
	if err := e.warmUp(ctx); err != nil {
		return err
	}
	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

// warmUp sends and receives 2,000 messages through the proxy once,
// unmeasured, with a request timeout of a minute: on a busy machine the
// proxy's first calls, before its JIT compiler has run, can take longer
// than the driver's 3 s, which a measured run would count as failures.
func (e *env) warmUp(ctx context.Context) error {
	const topic = "warm-up"
	if err := e.topics.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: queues}); err != nil {
		return err
	}
	fmt.Println("warming the proxy up with barerocketmq")
	cmd := exec.CommandContext(ctx, filepath.Join(e.dir, "barerocketmq"), "-endpoint", e.proxy, "-topic", topic, "-records", "2000", "-request-timeout", "1m")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("warm-up: %w\n%s", err, toolcompare.Tail(string(out)))
	}
	return nil
}

// perfSources are the benchmark producer's source files in RocketMQ's
// repository: the producer, and the ACL hook it refers to.
var perfSources = []string{"Producer.java", "AclClient.java"}

// buildPerf compiles RocketMQ's benchmark producer from the checkout src
// against the broker's jars in lib, and writes perf.sh: the producer on
// topic $1, $2 records of $3 bytes, in a JVM of its own; it returns the
// script's path.
func (e *env) buildPerf(ctx context.Context, src, lib string) (string, error) {
	pkg := filepath.Join(src, "example", "src", "main", "java", "org", "apache", "rocketmq", "example", "benchmark")
	classes := filepath.Join(e.dir, "perf-classes")
	args := []string{"-nowarn", "-d", classes, "-cp", filepath.Join(lib, "*")}
	for _, f := range perfSources {
		args = append(args, filepath.Join(pkg, f))
	}
	fmt.Printf("compiling %s from %s with javac\n", perfTool, src)
	if out, err := exec.CommandContext(ctx, "javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("-rocketmq-src: compile %s (a checkout of https://github.com/apache/rocketmq at rocketmq-all-%s, and a JDK 17+): %w\n%s",
			strings.Join(perfSources, ", "), rocketmq.Version, err, toolcompare.Tail(string(out)))
	}
	script := fmt.Sprintf(`#!/bin/sh
exec java -Xms512m -Xmx512m -Duser.home='%[1]s' -Drocketmq.client.logRoot='%[1]s/perf-logs' -cp '%[2]s:%[3]s/*' \
  org.apache.rocketmq.example.benchmark.Producer -n '%[4]s' -t "$1" -q "$2" -s "$3" -w %[5]d
`, e.dir, classes, lib, e.namesrv, *perfThreads)
	path := filepath.Join(e.dir, "perf.sh")
	return path, os.WriteFile(path, []byte(script), 0o755)
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	prod := append([]toolcompare.Tool{e.bare(size, "-consume=false")},
		e.brokerbench(size, "producer", "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n", toolcompare.PublishRate)...)
	if e.perf != "" {
		prod = append(prod, toolcompare.Tool{Name: perfTool, Cmd: func(topic string, n int64) []string {
			return []string{e.perf, topic, strconv.FormatInt(n, 10), strconv.Itoa(size)}
		}, Rate: perfRate, Count: perfCount})
	}
	both := append([]toolcompare.Tool{e.bare(size)},
		e.brokerbench(size, "publish-consume", "producersPerTopic: 1\nsubscriptionsPerTopic: 1\nconsumersPerSubscription: 1\n", toolcompare.LastDeliveryRate)...)
	if *profiles != "" {
		profiled(prod)
		profiled(both)
	}
	var all []toolcompare.Measurement
	for _, side := range []struct {
		role, prefix string
		tools        []toolcompare.Tool
	}{{"producer", "p", prod}, {"publish+consume", "b", both}} {
		ms, err := toolcompare.Rounds(ctx, e.runOnTopic, side.tools, side.role, size, o.Records, o.Reps,
			func(rep, i int) string { return fmt.Sprintf("%s-%d-%d-%d", side.prefix, size, rep, i) })
		all = append(all, ms...)
		if err != nil {
			return all, err
		}
	}
	toolcompare.Report(all,
		toolcompare.Side{Role: "producer", Tools: prod, Peers: toolcompare.Peers(prod)},
		toolcompare.Side{Role: "publish+consume", Tools: both, Peers: toolcompare.Peers(both)})
	return all, nil
}

// profiled makes brokerbench and the bare loop among tools write a CPU
// profile of each run under -pprof: brokerbench into the directory
// TOPIC-brokerbench (cpu.pprof, heap.pprof), the bare loop into
// TOPIC-bare.pprof.
func profiled(tools []toolcompare.Tool) {
	for i, t := range tools {
		var args func(topic string) []string
		switch {
		case t.Name == "brokerbench":
			args = func(topic string) []string {
				return []string{"--pprof", filepath.Join(*profiles, topic+"-brokerbench")}
			}
		case t.Name == bare:
			args = func(topic string) []string {
				return []string{"-cpuprofile", filepath.Join(*profiles, topic+"-bare.pprof")}
			}
		default:
			continue
		}
		cmd := t.Cmd
		tools[i].Cmd = func(topic string, n int64) []string { return append(cmd(topic, n), args(topic)...) }
	}
}

// runOnTopic creates the run's topic, then runs the tool on it: the
// broker creates no topic on first use.
func (e *env) runOnTopic(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, topic string) (toolcompare.Measurement, error) {
	if err := e.topics.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: queues}); err != nil {
		return toolcompare.Measurement{}, err
	}
	return toolcompare.Run(ctx, t, role, size, records, rep, topic)
}

// bare is barerocketmq with the driver's settings and extra flags, on
// the run's topic.
func (e *env) bare(size int, extra ...string) toolcompare.Tool {
	return toolcompare.Tool{Name: bare, Cmd: func(topic string, n int64) []string {
		return append([]string{filepath.Join(e.dir, "barerocketmq"), "-endpoint", e.proxy, "-topic", topic, "-records", strconv.FormatInt(n, 10),
			"-size", strconv.Itoa(size), "-request-timeout", requestTimeout}, extra...)
	}, Rate: toolcompare.KeyRate}
}

// brokerbench is brokerbench on a workload of the given clients, on the
// run's topic, and with -baseline brokerbench at that revision too; rate
// reads its results.
func (e *env) brokerbench(size int, role, clients string, rate func(*results.Run) float64) []toolcompare.Tool {
	wl := filepath.Join(e.dir, fmt.Sprintf("%s-%d.yaml", role, size))
	text := fmt.Sprintf("name: compare-rocketmq-%s-%d\ntopics: 1\npartitionsPerTopic: %d\nmessageSize: %d\n%srate: 0\nwarmup: 0s\nduration: 10m\n"+
		"driver:\n  driver: rocketmq\n  commonConfig: {requestTimeoutMs: \"%d\"}\n", role, size, queues, size, clients, requestTimeoutMs)
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		panic(err)
	}
	return toolcompare.Brokerbench(e.dir, e.baseline, wl, e.proxy+",namesrv://"+e.namesrv, func(topic string) string { return topic }, rate)
}

// perfSummary is the benchmark producer's last line when it ran for 2
// seconds or more: "[Complete] Send Total: N | Send TPS: R | ... | Send
// Failed: F | Response Failed: G". Send Total counts the failed sends
// too; the rate only those the broker stored.
var perfSummary = regexp.MustCompile(`\[Complete\] Send Total: (\d+) \| Send TPS: (\d+) \|.*Send Failed: (\d+) \| Response Failed: (\d+)`)

// perfRate reads the benchmark producer's rate: its stored sends per
// second over its last 10 once-a-second snapshots (at most the last 9
// seconds of its run).
func perfRate(out string) (float64, error) {
	m := perfSummary.FindStringSubmatch(out)
	if m == nil {
		return 0, errors.New("no summary with a rate ([Complete] Send Total: N | Send TPS: R) in the benchmark producer's output: it prints one only after 2 seconds or more (raise -records)")
	}
	return strconv.ParseFloat(m[2], 64)
}

// perfCount reads the messages the benchmark producer had stored: its
// sends less the failed ones. A send that fails (on a busy machine, the
// first of its 64 threads' sends to a cold broker) is not sent again:
// the producer sleeps 3 s and goes on to the next.
func perfCount(out string) (int64, error) {
	m := perfSummary.FindStringSubmatch(out)
	if m == nil {
		return 0, errors.New("no summary ([Complete] Send Total: N | ...) in the benchmark producer's output")
	}
	total, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, err
	}
	failed, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil || failed > total {
		return 0, fmt.Errorf("the benchmark producer's summary counts %s failed of %s sends", m[3], m[1])
	}
	return total - failed, nil
}
