// Command compare-pulsar-tools measures brokerbench's Apache Pulsar load
// generator side by side with Pulsar's own perf tool (pulsar-perf, the
// PulsarPerfTestTool of org.apache.pulsar:pulsar-testclient) and with a
// bare pulsar-client-go loop (bench/barepulsar, the client library's
// ceiling), against one local Pulsar standalone node it starts itself.
//
// Every tool runs one producer and one consumer on a fresh topic of one
// partition: batches of at most 1 ms and 1 MiB with no count limit (the
// defaults of brokerbench's Pulsar driver), at most 16384 messages
// awaiting the broker, a Failover subscription from the earliest message
// with a receiver queue of 10000, a fixed record count, flat out.
// pulsar-perf cannot produce and consume in one process, so its producer
// and consumer are two JVMs under one shell, whose CPU both count. The
// order of the tools rotates every repetition. It reports messages per
// second (by the tool's own clock, and by wall time including start-up),
// the client processes' CPU seconds (getrusage of that child only, the
// broker excluded), messages per CPU-second with and without start-up,
// and the ratios brokerbench/pulsar-perf and brokerbench/bare as
// min/median/max over the repetitions.
//
//	go run ./bench/compare-pulsar-tools                 # 500k x 100 B, 3 repetitions
//	go run ./bench/compare-pulsar-tools -records 50000 -reps 2
//	go run ./bench/compare-pulsar-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/pulsar"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
)

// perfVersion is the pulsar-testclient release whose tool classes run:
// Maven Central has none of 4.0.7 (the broker's release), and 4.0.8's
// own dependencies are incomplete there, so its jar alone runs on the
// broker's 4.0.7 jars, the client library included.
const perfVersion = "4.0.8"

const perfPOM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.brokerbench</groupId>
  <artifactId>pulsar-perf</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.pulsar</groupId><artifactId>pulsar-testclient</artifactId><version>` + perfVersion + `</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
  </dependencies>
</project>
`

// perfLog4j logs pulsar-perf's summary lines (info) to the console.
const perfLog4j = `<Configuration status="warn">
  <Appenders><Console name="console" target="SYSTEM_OUT"><PatternLayout pattern="%m%n"/></Console></Appenders>
  <Loggers><Root level="info"><AppenderRef ref="console"/></Root></Loggers>
</Configuration>
`

func main() {
	toolcompare.Main("compare-pulsar-tools", toolcompare.Options{Records: 500_000, Sizes: []int{100}, Reps: 3, Port: 29750, Out: "bench/results/compare-pulsar-tools.json"}, run)
}

type env struct {
	dir, service, admin string
	// baseline is the git revision whose brokerbench also runs ("" for
	// none), built as brokerbench-baseline.
	baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-pulsar-tools", "barepulsar", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	perfLib, err := installPerf(ctx)
	if err != nil {
		return err
	}
	c := pulsar.NewLocal(o.Port, 1)
	st, stopBroker, err := toolcompare.Up(ctx, c, dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	n := st.Nodes[0]
	e := &env{dir: dir, service: fmt.Sprintf("pulsar://%s:%d", n.Host, n.Ports["client"]), admin: fmt.Sprintf("http://%s:%d", n.Host, n.Ports["http"]), baseline: o.Baseline}
	if err := e.writePerfScript(filepath.Join(perfLib, "*") + ":" + filepath.Join(c.CacheDir, "pulsar-"+pulsar.Version, "lib", "*")); err != nil {
		return err
	}
	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

// installPerf downloads pulsar-perf's jar into the brokerbench cache
// unless already there, and returns its directory.
func installPerf(ctx context.Context) (string, error) {
	dist := filepath.Join(local.DefaultCacheDir(), "pulsar-perf-"+perfVersion)
	done := filepath.Join(dist, ".complete")
	if _, err := os.Stat(done); err == nil {
		return filepath.Join(dist, "lib"), nil
	}
	fmt.Printf("installing pulsar-testclient %s from Maven Central into %s\n", perfVersion, dist)
	if err := local.MavenDependencies(ctx, dist, perfPOM, "pulsar-testclient "+perfVersion); err != nil {
		return "", err
	}
	return filepath.Join(dist, "lib"), os.WriteFile(done, []byte(perfVersion+"\n"), 0o644)
}

// writePerfScript writes perf.sh: pulsar-perf's consumer and producer
// on topic $1, $2 records of $3 bytes, each in a JVM of its own; the
// consumer's output follows the producer's, and the script fails if
// either does (the consumer is stopped if the producer fails). The
// producer has no unlimited rate (its rate limiter refuses 0): 10^9
// msg/s is flat out.
func (e *env) writePerfScript(classpath string) error {
	logConf := filepath.Join(e.dir, "perf-log4j2.xml")
	clientConf := filepath.Join(e.dir, "perf-client.conf")
	if err := os.WriteFile(logConf, []byte(perfLog4j), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(clientConf, nil, 0o644); err != nil {
		return err
	}
	java := fmt.Sprintf("java -Xmx512m -XX:MaxDirectMemorySize=512m --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED "+
		"-Dio.netty.tryReflectionSetAccessible=true -Dlog4j2.configurationFile='%s' -cp '%s' org.apache.pulsar.testclient.PulsarPerfTestTool '%s'",
		logConf, classpath, clientConf)
	consumerLog := filepath.Join(e.dir, "perf-consumer.log")
	script := fmt.Sprintf(`#!/bin/sh
topic="persistent://public/default/$1"
%[1]s consume -u '%[2]s' -ss sub -st Failover -sp Earliest -q 10000 -m "$2" "$topic" >'%[3]s' 2>&1 &
consumer=$!
%[1]s produce -u '%[2]s' -r 1000000000 -m "$2" -s "$3" -b 1 -bb 1048576 -bm 2147483647 -o 16384 --warmup-time 0 "$topic"
produced=$?
[ $produced -eq 0 ] || kill $consumer
wait $consumer
consumed=$?
cat '%[3]s'
[ $produced -eq 0 ] && [ $consumed -eq 0 ]
`, java, e.service, consumerLog)
	return os.WriteFile(filepath.Join(e.dir, "perf.sh"), []byte(script), 0o755)
}

const role = "produce+consume"

// tools are the clients under test: pulsar-perf, brokerbench, the bare
// loop, and with -baseline brokerbench at that revision.
func (e *env) tools(size int) []toolcompare.Tool {
	wl := e.workload(size)
	brokerbench := func(name, bin string) toolcompare.Tool {
		return toolcompare.Tool{Name: name, Cmd: func(_ string, n int64) []string {
			return []string{filepath.Join(e.dir, bin), "run", wl, "--broker", e.service + "," + e.admin,
				"--messages", strconv.FormatInt(n, 10), "--quiet", "-o", filepath.Join(e.dir, "bb.json")}
		}, Rate: e.brokerbenchRate, Measured: toolcompare.BrokerbenchVerdicts}
	}
	tools := []toolcompare.Tool{
		{Name: "pulsar-perf", Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.dir, "perf.sh"), topic, strconv.FormatInt(n, 10), strconv.Itoa(size)}
		}, Rate: perfRate},
		brokerbench("brokerbench", "brokerbench"),
		{Name: "bare pulsar-client-go", Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.dir, "barepulsar"), "-url", e.service, "-topic", "persistent://public/default/" + topic,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size)}
		}, Rate: toolcompare.KeyRate},
	}
	if e.baseline != "" {
		tools = append(tools, brokerbench(toolcompare.BaselineTool(e.baseline), "brokerbench-baseline"))
	}
	return tools
}

// workload writes brokerbench's side: one topic of one partition, one
// producer and one subscription of one consumer, the driver's defaults.
func (e *env) workload(size int) string {
	path := filepath.Join(e.dir, fmt.Sprintf("pulsar-%d.yaml", size))
	text := fmt.Sprintf(`name: compare-pulsar-%d
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
  driver: pulsar
`, size, size)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "compare-pulsar-tools:", err)
		os.Exit(1)
	}
	return path
}

// runOnTopic runs a tool after creating its topic in public/default as a
// partitioned topic of one partition, as brokerbench's driver creates
// its own (brokerbench's run ignores it).
func (e *env) runOnTopic(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, topic string) (toolcompare.Measurement, error) {
	url := e.admin + "/admin/v2/persistent/public/default/" + topic + "/partitions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewBufferString("1"))
	if err != nil {
		return toolcompare.Measurement{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return toolcompare.Measurement{}, fmt.Errorf("create topic %s: %w", topic, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return toolcompare.Measurement{}, fmt.Errorf("create topic %s: %s", topic, resp.Status)
	}
	return toolcompare.Run(ctx, t, role, size, records, rep, topic)
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	tools := e.tools(size)
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	ms, err := toolcompare.Rounds(ctx, e.runOnTopic, tools, role, size, o.Records, o.Reps,
		func(rep, i int) string { return fmt.Sprintf("t-%d-%d-%d", size, rep, i) })
	if err == nil {
		peers := []string{"pulsar-perf", "bare pulsar-client-go"}
		if e.baseline != "" {
			peers = append(peers, toolcompare.BaselineTool(e.baseline))
		}
		toolcompare.Report(ms, toolcompare.Side{Role: role, Tools: tools, Peers: peers})
	}
	return ms, err
}

// perfSummary is pulsar-perf's producer summary: "Aggregated throughput
// stats --- N records sent --- R msg/s".
var perfSummary = regexp.MustCompile(`Aggregated throughput stats --- ([0-9,]+) records sent --- ([0-9.,]+) msg/s`)

// perfRate reads the producer's rate from pulsar-perf's output, from its
// first send to its last acknowledgement, as brokerbench's measured
// publish rate.
func perfRate(out string) (float64, error) {
	m := perfSummary.FindStringSubmatch(out)
	if m == nil {
		return 0, errors.New("no producer summary (Aggregated throughput stats --- N records sent) in pulsar-perf's output")
	}
	return strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
}

// brokerbenchRate reads the measured publish rate from the results file.
func (e *env) brokerbenchRate(string) (float64, error) {
	r, err := results.Read(filepath.Join(e.dir, "bb.json"))
	if err != nil {
		return 0, err
	}
	return r.Measured.PublishRate, nil
}
