// Command compare-kafka-tools measures brokerbench's Kafka load generator
// side by side with Kafka's own perf tools (ProducerPerformance,
// ConsumerPerformance) and with a bare franz-go loop (bench/barekafka, the
// client library's ceiling), against one local broker it starts itself. The
// bare producer runs twice: with one value for every record, always in the
// cache, and with as many distinct values as brokerbench keeps in
// flight, each cold by the time the client copies it.
//
// For each message size it runs, alternating the order each repetition,
// every producer tool on a fresh 6-partition topic (RF 1, acks=1, random
// payloads, max rate, a fixed record count), then every consumer tool over
// one pre-filled topic. It reports messages per second (by the tool's own
// clock, and by wall time including process start-up), the client
// process's CPU seconds (getrusage of that child only), messages per
// CPU-second with and without start-up (start-up measured by a 1-record run
// of each tool), and the ratios brokerbench/Kafka tool and brokerbench/bare
// as min/median/max over the repetitions.
//
//	go run ./bench/compare-kafka-tools                 # 8M x 100 B, 800k x 1 KB, 3 repetitions
//	go run ./bench/compare-kafka-tools -records 1000000 -reps 2 -sizes 100
//	go run ./bench/compare-kafka-tools -baseline v0.9  # this tree against brokerbench at v0.9
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
)

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "compare-kafka-tools:", err)
	os.Exit(1)
}

func main() {
	toolcompare.Main("compare-kafka-tools", toolcompare.Options{Records: 8_000_000, Sizes: []int{100, 1024}, Reps: 3, Port: 29592, Out: "bench/results/compare-kafka-tools.json"}, run)
}

type (
	measurement = toolcompare.Measurement
	tool        = toolcompare.Tool
)

type env struct {
	bin, addr, lib, dir string
	// baseline is the git revision whose brokerbench also runs ("" for
	// none), built as bin/brokerbench-baseline.
	baseline string
	admin    *kadm.Client
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-kafka-tools", "barekafka", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	k := kafka.NewLocal(o.Port, 1)
	k.HeapMB = 1024
	st, stopBroker, err := toolcompare.Up(ctx, k, dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Address()))
	if err != nil {
		return err
	}
	defer cl.Close()
	e := &env{bin: dir, addr: st.Address(), lib: kafka.LibDir(k.CacheDir, st.Version), dir: dir, baseline: o.Baseline, admin: kadm.NewClient(cl)}

	return toolcompare.EachSize(o, func(size int) ([]measurement, error) {
		return e.compare(ctx, o, size, max(1000, o.Records*100/int64(size)))
	})
}

// bareValues is the bare producer loop sending as many distinct values as
// brokerbench's producer keeps in flight (runner.InFlightWindow: 16,384
// at 100 B and 1 KB),
// so that its values, like brokerbench's, are no longer in the cache when
// the client copies them into a request.
const bareValues = "bare franz-go, in-flight values"

// bareStamped is the bare producer that also writes each record's number
// into its value just before producing it, with as many records buffered
// as brokerbench keeps in flight: the ceiling of a load generator that
// stamps every message.
const bareStamped = "bare franz-go, stamped values"

func (e *env) producers(size int) []tool {
	bbWorkload := e.workload("producer", size, "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n")
	bbAs := func(bin string, extra ...string) func(string, int64) []string {
		return func(topic string, n int64) []string {
			out := filepath.Join(e.dir, "bb.json")
			return append([]string{filepath.Join(e.bin, bin), "run", bbWorkload, "--broker", e.addr, "--topic", topic,
				"--messages", strconv.FormatInt(n, 10), "--quiet", "-o", out}, extra...)
		}
	}
	bb := func(extra ...string) func(string, int64) []string { return bbAs("brokerbench", extra...) }
	tools := []tool{
		{Name: "kafka ProducerPerformance", Cmd: func(topic string, n int64) []string {
			return e.java("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", strconv.FormatInt(n, 10),
				"--record-size", strconv.Itoa(size), "--throughput", "-1", "--producer-props", "bootstrap.servers="+e.addr, "acks=1")
		}, Rate: producerPerformanceRate},
		{Name: "brokerbench", Cmd: bb(), Rate: e.brokerbenchRate("publish"), Measured: toolcompare.BrokerbenchVerdicts},
		{Name: "brokerbench, recording off", Cmd: bb("--no-latency-recording"), Rate: e.brokerbenchRate("publish"), Measured: toolcompare.BrokerbenchVerdicts},
		{Name: "bare franz-go", Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.bin, "barekafka"), "produce", "-broker", e.addr, "-topic", topic,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size)}
		}, Rate: toolcompare.KeyRate},
		{Name: bareValues, Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.bin, "barekafka"), "produce", "-broker", e.addr, "-topic", topic,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size),
				"-values", strconv.Itoa(runner.InFlightWindow(size, 1, runner.DefaultMaxInFlightBytes))}
		}, Rate: toolcompare.KeyRate},
		{Name: bareStamped, Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.bin, "barekafka"), "produce", "-broker", e.addr, "-topic", topic,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(size),
				"-values", strconv.Itoa(runner.InFlightWindow(size, 1, runner.DefaultMaxInFlightBytes) + 1), "-stamp"}
		}, Rate: toolcompare.KeyRate},
	}
	if e.baseline != "" {
		tools = append(tools, tool{Name: toolcompare.BaselineTool(e.baseline), Cmd: bbAs("brokerbench-baseline"), Rate: e.brokerbenchRate("publish"), Measured: toolcompare.BrokerbenchVerdicts})
	}
	return tools
}

func (e *env) consumers(size int) []tool {
	bbWorkload := e.workload("consumer", size, "producersPerTopic: 0\nsubscriptionsPerTopic: 1\nconsumersPerSubscription: 1\n")
	bbAs := func(bin string) func(string, int64) []string {
		return func(topic string, n int64) []string {
			return []string{filepath.Join(e.bin, bin), "run", bbWorkload, "--broker", e.addr, "--topic", topic,
				"--messages", strconv.FormatInt(n, 10), "--quiet", "-o", filepath.Join(e.dir, "bb.json")}
		}
	}
	tools := []tool{
		{Name: "kafka ConsumerPerformance", Cmd: func(topic string, n int64) []string {
			return e.java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", e.addr, "--topic", topic,
				"--messages", strconv.FormatInt(n, 10), "--group", fmt.Sprintf("cp-%d", time.Now().UnixNano()), "--timeout", "60000")
		}, Rate: consumerPerformanceRate},
		{Name: "brokerbench", Cmd: bbAs("brokerbench"), Rate: e.brokerbenchRate("consume"), Measured: toolcompare.BrokerbenchVerdicts},
		{Name: "bare franz-go", Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.bin, "barekafka"), "consume", "-broker", e.addr, "-topic", topic, "-records", strconv.FormatInt(n, 10)}
		}, Rate: toolcompare.KeyRate},
	}
	if e.baseline != "" {
		tools = append(tools, tool{Name: toolcompare.BaselineTool(e.baseline), Cmd: bbAs("brokerbench-baseline"), Rate: e.brokerbenchRate("consume"), Measured: toolcompare.BrokerbenchVerdicts})
	}
	return tools
}

// workload writes a brokerbench workload for one side of the comparison.
func (e *env) workload(role string, size int, clients string) string {
	path := filepath.Join(e.dir, fmt.Sprintf("%s-%d.yaml", role, size))
	text := fmt.Sprintf("name: compare-%s-%d\ntopics: 1\npartitionsPerTopic: 6\nmessageSize: %d\n%srate: 0\nwarmup: 0s\nduration: 10m\n"+
		"driver:\n  driver: kafka\n  producerConfig:\n    acks: \"1\"\n", role, size, size, clients)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fatal(err)
	}
	return path
}

func (e *env) java(class string, args ...string) []string {
	return append([]string{"java", "-Xmx1g", "-cp", filepath.Join(e.lib, "*"), class}, args...)
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int, records int64) ([]measurement, error) {
	var ms []measurement
	prod := e.producers(size)
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, records, o.Reps)
	startup := map[string]float64{}
	for _, t := range prod {
		m, err := e.measure(ctx, t, "producer", size, 1, 0, fmt.Sprintf("startup-%d", time.Now().UnixNano()))
		if err != nil {
			return ms, err
		}
		startup["producer/"+t.Name] = m.CPU
	}
	for rep := range o.Reps {
		for i := range prod {
			t := prod[(i+rep)%len(prod)]
			m, err := e.measure(ctx, t, "producer", size, records, rep, fmt.Sprintf("prod-%d-%d-%d", size, rep, i))
			if err != nil {
				return ms, err
			}
			m.Startup = startup["producer/"+t.Name]
			ms = append(ms, m)
		}
	}
	// One topic, filled once by brokerbench (so every message carries its
	// header and counts as consumed), read by every consumer.
	filled := fmt.Sprintf("prefilled-%d", size)
	if _, err := e.measure(ctx, prod[1], "fill", size, records, 0, filled); err != nil {
		return ms, err
	}
	cons := e.consumers(size)
	for _, t := range cons {
		m, err := e.measure(ctx, t, "consumer", size, 1, 0, filled)
		if err != nil {
			return ms, err
		}
		startup["consumer/"+t.Name] = m.CPU
	}
	for rep := range o.Reps {
		for i := range cons {
			t := cons[(i+rep)%len(cons)]
			m, err := e.measure(ctx, t, "consumer", size, records, rep, filled)
			if err != nil {
				return ms, err
			}
			m.Startup = startup["consumer/"+t.Name]
			ms = append(ms, m)
		}
	}
	_, _ = e.admin.DeleteTopics(ctx, filled)
	report(ms, prod, cons, e.baseline)
	return ms, nil
}

// measure runs t once. Producer and fill runs get a fresh topic, deleted
// afterwards unless it is the fill; consumer runs read the given topic.
func (e *env) measure(ctx context.Context, t tool, role string, size int, records int64, rep int, topic string) (measurement, error) {
	if role != "consumer" {
		if _, err := e.admin.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
			return measurement{}, fmt.Errorf("create topic %s: %w", topic, err)
		}
		if err := e.waitListed(ctx, topic); err != nil {
			return measurement{}, err
		}
		if role == "producer" {
			defer func() { _, _ = e.admin.DeleteTopics(context.Background(), topic) }()
		}
	}
	return toolcompare.Run(ctx, t, role, size, records, rep, topic)
}

// waitListed returns once the broker's metadata lists topic with its
// leaders, at most 30 s after it was created: a tool that checks the
// topic before it produces must find it.
func (e *env) waitListed(ctx context.Context, topic string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		td, err := e.admin.ListTopics(ctx, topic)
		if err == nil && td.Has(topic) && td[topic].Err == nil && len(td[topic].Partitions) == 6 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s is not in the broker's metadata 30 s after it was created (%v)", topic, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// producerPerformanceRate reads the summary line "N records sent, R
// records/sec (...)".
func producerPerformanceRate(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, " records/sec"); i > 0 && strings.Contains(line, "records sent") && strings.Contains(line, "avg latency") {
			f := strings.Fields(line[:i])
			return strconv.ParseFloat(f[len(f)-1], 64)
		}
	}
	return 0, errors.New("no summary line in ProducerPerformance output")
}

// consumerPerformanceRate reads fetch.nMsg.sec (group join excluded) from
// the CSV line that follows the header.
func consumerPerformanceRate(out string) (float64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	var header []string
	for sc.Scan() {
		cols := strings.Split(sc.Text(), ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		if slices.Contains(cols, "fetch.nMsg.sec") {
			header = cols
			continue
		}
		if header != nil && len(cols) == len(header) {
			return strconv.ParseFloat(cols[slices.Index(header, "fetch.nMsg.sec")], 64)
		}
	}
	return 0, errors.New("no result line in ConsumerPerformance output")
}

// brokerbenchRate reads the measured publish or consume rate from the
// results file the run wrote.
func (e *env) brokerbenchRate(which string) func(string) (float64, error) {
	return func(string) (float64, error) {
		r, err := results.Read(filepath.Join(e.dir, "bb.json"))
		if err != nil {
			return 0, err
		}
		if which == "publish" {
			return r.Measured.PublishRate, nil
		}
		return r.Measured.ConsumeRate, nil
	}
}

func report(ms []measurement, prod, cons []tool, baseline string) {
	peers := func(tools []tool) []string {
		p := []string{tools[0].Name, "bare franz-go"}
		if baseline != "" {
			p = append(p, toolcompare.BaselineTool(baseline))
		}
		return p
	}
	toolcompare.Report(ms,
		toolcompare.Side{Role: "producer", Tools: prod, Peers: append(peers(prod), bareValues, bareStamped),
			Extra: func(ratio func(a, b string, which int) string) {
				fmt.Printf("    recording off / on: msgs/s %s (recording costs 1 - 1/ratio)\n", ratio("brokerbench, recording off", "brokerbench", 0))
			}},
		toolcompare.Side{Role: "consumer", Tools: cons, Peers: peers(cons)})
}
