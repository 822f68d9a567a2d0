// Command compare-nsq-tools measures brokerbench's NSQ load generator side
// by side with NSQ's own benchmark tools (bench_writer and bench_reader of
// the NSQ release brokerbench runs, built from the Go module proxy) and
// with a bare go-nsq loop (bench/barensq, the client library's ceiling),
// against one local nsqd it starts as 'brokerbench local up nsq' does.
//
// Every run uses a fresh topic, flat out; the order of the tools rotates
// every repetition. Three sides:
//
//   - producer: brokerbench and barensq publish asynchronously (PUB, each
//     acknowledged by nsqd in order), at most 32 MiB / size and at most
//     16,384 messages awaiting their acknowledgement; bench_writer sends
//     MPUB batches of 200 and waits for each, on one connection per core;
//   - consumer: each run's topic is filled first by brokerbench (not
//     measured), so that its first channel holds every message; the tool
//     then reads it on a channel of its own: barensq with the driver's
//     defaults (RDY 1000, nsqd's output buffer 16 KiB or 250 ms),
//     bench_reader with RDY 2500 on one connection per core. brokerbench
//     is not among them: a channel receives only what is published after
//     it exists, so brokerbench refuses a consume-only run on NSQ;
//   - publish+consume: one producer and one consumer in one process
//     (NSQ's tools have no such mode), brokerbench and barensq; the rate
//     is the records from the first publish to the last delivery.
//
// bench_writer and bench_reader run for a time (-peer-runfor), not a
// record count: their figures count the records they report, and
// bench_reader's rate includes the time it waited once its channel was
// empty, so only its figures per CPU-second compare.
//
// It reports messages per second (by the tool's own clock, and by wall
// time including start-up), the client process's CPU seconds (getrusage
// of that child only, nsqd excluded), messages per CPU-second with and
// without start-up, and the ratios of brokerbench to the others (of the
// bare loop to bench_reader for the consumers) as min/median/max over
// the repetitions.
//
//	go run ./bench/compare-nsq-tools                  # 300k x 100 B, 3 repetitions
//	go run ./bench/compare-nsq-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/nsq"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
)

const (
	writer, reader = "bench_writer", "bench_reader"
	bare           = "bare go-nsq"
)

// peerRunfor is how long bench_writer and bench_reader run.
var peerRunfor = flag.Duration("peer-runfor", 4*time.Second, "how long bench_writer and bench_reader run (they run for a time, not a record count)")

func main() {
	toolcompare.Main("compare-nsq-tools", toolcompare.Options{Records: 300_000, Sizes: []int{100}, Reps: 3, Port: 29415, Out: "bench/results/compare-nsq-tools.json"}, run)
}

type env struct {
	dir, tools, tcp, http, baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-nsq-tools", "barensq", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e := &env{dir: dir, tools: filepath.Join(local.DefaultCacheDir(), "nsq-bench-"+nsq.Version), baseline: o.Baseline}
	if _, err := os.Stat(filepath.Join(e.tools, reader)); err != nil {
		fmt.Printf("building NSQ %s's bench_writer and bench_reader from the Go module proxy into %s\n", nsq.Version, e.tools)
		if err := nsq.Build(ctx, e.tools, "bench/bench_writer", "bench/bench_reader"); err != nil {
			return err
		}
	}
	c := nsq.NewLocal(o.Port, 1)
	st, stopBroker, err := toolcompare.Up(ctx, c, dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	e.tcp, e.http = st.Address(), c.Nodes()[0].Addr("http")
	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	prod, cons, both := e.producers(size), e.consumers(size), e.publishConsume(size)
	var all []toolcompare.Measurement
	for _, side := range []struct {
		role   string
		tools  []toolcompare.Tool
		run    toolcompare.RunFunc
		prefix string
	}{{"producer", prod, e.runThenDelete, "p"}, {"consumer", cons, e.fillThenConsume, "c"}, {"publish+consume", both, e.runThenDelete, "b"}} {
		ms, err := toolcompare.Rounds(ctx, side.run, side.tools, side.role, size, o.Records, o.Reps,
			func(rep, i int) string { return fmt.Sprintf("%s-%d-%d-%d", side.prefix, size, rep, i) })
		all = append(all, ms...)
		if err != nil {
			return all, err
		}
	}
	toolcompare.Report(all,
		toolcompare.Side{Role: "producer", Tools: prod, Peers: toolcompare.Peers(prod)},
		toolcompare.Side{Role: "consumer", Tools: cons, Extra: func(ratio func(a, b string, which int) string) {
			fmt.Printf("    %s / %-19s msgs/CPU-s %s, msgs/CPU-s start-up excluded %s\n", bare, reader, ratio(bare, reader, 2), ratio(bare, reader, 3))
		}},
		toolcompare.Side{Role: "publish+consume", Tools: both, Peers: toolcompare.Peers(both)})
	return all, nil
}

// api posts to nsqd's HTTP API; a topic that is not there is no error.
func (e *env) api(ctx context.Context, path, topic string) error {
	u := url.URL{Scheme: "http", Host: e.http, Path: path, RawQuery: url.Values{"topic": {topic}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("nsqd %s %s: %w", path, topic, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("nsqd %s %s: %s", path, topic, resp.Status)
	}
	return nil
}

// runThenDelete runs a tool on a topic and deletes the topic (brokerbench
// deletes its own, named otherwise).
func (e *env) runThenDelete(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, topic string) (toolcompare.Measurement, error) {
	m, err := toolcompare.Run(ctx, t, role, size, records, rep, topic)
	return m, errors.Join(err, e.api(ctx, "/topic/delete", topic))
}

// fillThenConsume fills a new topic with records messages by brokerbench,
// so that every message carries its header, then runs a consumer on it
// and deletes it. nsqd keeps what a topic without channels holds for its
// first channel, the consumer's.
func (e *env) fillThenConsume(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, topic string) (toolcompare.Measurement, error) {
	if err := e.api(ctx, "/topic/create", topic); err != nil {
		return toolcompare.Measurement{}, err
	}
	filler := e.brokerbench(size, "fill", "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n", true, toolcompare.PublishRate)[0]
	if _, err := toolcompare.Run(ctx, filler, "fill", size, records, rep, topic); err != nil {
		return toolcompare.Measurement{}, err
	}
	return e.runThenDelete(ctx, t, role, size, records, rep, topic)
}

// runfor is how long a peer tool runs: a millisecond for a start-up run
// of one record (it still writes or reads one batch), -peer-runfor else.
func runfor(records int64) string {
	if records == 1 {
		return "1ms"
	}
	return peerRunfor.String()
}

func (e *env) producers(size int) []toolcompare.Tool {
	return append([]toolcompare.Tool{
		{Name: writer, Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.tools, writer), "-nsqd-tcp-address", e.tcp, "-topic", topic, "-size", strconv.Itoa(size), "-runfor", runfor(n)}
		}, Rate: peerRate, Count: peerCount},
		e.bare(size, "-consume=false"),
	}, e.brokerbench(size, "producer", "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n", false, toolcompare.PublishRate)...)
}

// consumers are bench_reader and the bare loop: brokerbench cannot
// consume alone on NSQ (a channel it makes receives only what is
// published after it), so its consumer is measured in publish+consume.
func (e *env) consumers(size int) []toolcompare.Tool {
	return []toolcompare.Tool{
		{Name: reader, Cmd: func(topic string, n int64) []string {
			return []string{filepath.Join(e.tools, reader), "-nsqd-tcp-address", e.tcp, "-topic", topic, "-channel", "bench_reader", "-size", strconv.Itoa(size), "-runfor", runfor(n)}
		}, Rate: peerRate, Count: peerCount},
		e.bare(size, "-produce=false"),
	}
}

func (e *env) publishConsume(size int) []toolcompare.Tool {
	return append([]toolcompare.Tool{e.bare(size)},
		e.brokerbench(size, "publish-consume", "producersPerTopic: 1\nsubscriptionsPerTopic: 1\nconsumersPerSubscription: 1\n", false, toolcompare.LastDeliveryRate)...)
}

// bare is barensq with the driver's settings and extra flags, on the
// run's topic.
func (e *env) bare(size int, extra ...string) toolcompare.Tool {
	return toolcompare.Tool{Name: bare, Cmd: func(topic string, n int64) []string {
		return append([]string{filepath.Join(e.dir, "barensq"), "-nsqd", e.tcp, "-http", e.http, "-topic", topic, "-records", strconv.FormatInt(n, 10),
			"-size", strconv.Itoa(size), "-pending", strconv.Itoa(toolcompare.InFlight(size))}, extra...)
	}, Rate: toolcompare.KeyRate}
}

// brokerbench is brokerbench on a workload of the given clients (on the
// run's topic, which it keeps, if existing is set), and with -baseline
// brokerbench at that revision too; rate reads its results.
func (e *env) brokerbench(size int, role, clients string, existing bool, rate func(*results.Run) float64) []toolcompare.Tool {
	var topic func(string) string
	if existing {
		topic = func(run string) string { return run }
	}
	wl := filepath.Join(e.dir, fmt.Sprintf("%s-%d.yaml", role, size))
	text := fmt.Sprintf("name: compare-nsq-%s-%d\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: %d\n%srate: 0\nwarmup: 0s\nduration: 10m\ndriver:\n  driver: nsq\n",
		role, size, size, clients)
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		panic(err)
	}
	return toolcompare.Brokerbench(e.dir, e.baseline, wl, e.http, topic, rate)
}

// peerSummary reads the duration and operations per second of
// bench_writer's and bench_reader's summary line ("... duration:
// 4.0012s - 9.537mb/s - 100000.000ops/s - 10.000us/op").
func peerSummary(out string) (time.Duration, float64, error) {
	for _, line := range strings.Split(out, "\n") {
		_, after, ok := strings.Cut(line, "duration: ")
		if !ok {
			continue
		}
		f := strings.Split(after, " - ")
		if len(f) < 3 {
			break
		}
		d, err := time.ParseDuration(strings.TrimSpace(f[0]))
		if err != nil {
			return 0, 0, err
		}
		ops, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f[2]), "ops/s"), 64)
		return d, ops, err
	}
	return 0, 0, errors.New("no 'duration: D - ... - Rops/s' line in the output")
}

func peerRate(out string) (float64, error) {
	_, ops, err := peerSummary(out)
	return ops, err
}

func peerCount(out string) (int64, error) {
	d, ops, err := peerSummary(out)
	return int64(ops*d.Seconds() + 0.5), err
}
