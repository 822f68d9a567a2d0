// Command compare-nats-tools measures brokerbench's NATS JetStream load
// generator side by side with the NATS CLI's 'nats bench' (natscli,
// built from the Go module proxy) and with a bare nats.go loop
// (bench/barenats, the client library's ceiling), against one local
// nats-server it starts itself.
//
// Every run uses one stream of one subject on file storage, flat out, a
// fixed record count; the order of the tools rotates every repetition.
// Three sides:
//
//   - producer: asynchronous publishes, at most 4000 (brokerbench,
//     barenats) or one batch of 500 (nats bench) awaiting their
//     acknowledgement;
//   - consumer: a stream filled once is read by each tool with a new
//     durable pull consumer: pulls of 500, explicit acknowledgement of
//     every message, at most 20,000 unacknowledged;
//   - publish+consume: one publisher and one consumer in one process, as
//     above (nats bench has no such mode); the rate is the records from
//     the first publish to the last delivery, so a consumer that falls
//     behind its producer lowers it.
//
// It reports messages per second (by the tool's own clock, and by wall
// time including start-up), the client process's CPU seconds (getrusage
// of that child only, the server excluded), messages per CPU-second with
// and without start-up, and the ratios brokerbench / nats bench and
// brokerbench / bare as min/median/max over the repetitions.
//
//	go run ./bench/compare-nats-tools                  # 500k x 100 B, 3 repetitions
//	go run ./bench/compare-nats-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
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
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/nats"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
)

// natscliVersion is the NATS CLI release built from the Go module proxy.
const natscliVersion = "0.5.1"

const (
	natsBench = "nats bench"
	bare      = "bare nats.go"
	// Every tool is given these: pubWindow and maxAckPending are the
	// driver's defaults; fetchBatch is nats bench's pull size, and the
	// driver, which by default pulls up to 16 MiB ahead, is set to it.
	pubWindow, fetchBatch, maxAckPending = 4000, 500, 20000
)

func main() {
	toolcompare.Main("compare-nats-tools", toolcompare.Options{Records: 500_000, Sizes: []int{100}, Reps: 3, Port: 29522, Out: "bench/results/compare-nats-tools.json"}, run)
}

type env struct {
	dir, url, natscli, baseline string
	js                          jetstream.JetStream // admin: fills and deletes streams, creates nats bench's consumers
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-nats-tools", "barenats", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	natscli, err := installNatscli(ctx, filepath.Join(local.DefaultCacheDir(), "natscli-"+natscliVersion))
	if err != nil {
		return err
	}
	st, stopBroker, err := toolcompare.Up(ctx, nats.NewLocal(o.Port, 1), dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	e := &env{dir: dir, url: "nats://" + st.Address(), natscli: natscli, baseline: o.Baseline}
	nc, err := natsgo.Connect(e.url)
	if err != nil {
		return err
	}
	defer nc.Close()
	if e.js, err = jetstream.New(nc); err != nil {
		return err
	}
	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

// installNatscli builds the NATS CLI from the Go module proxy into dir,
// unless there, and returns its path.
func installNatscli(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "nats")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Printf("building the NATS CLI %s from the Go module proxy into %s (a few minutes on first use)\n", natscliVersion, dir)
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/nats-io/natscli/nats@v"+natscliVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the NATS CLI: %w\n%s", err, toolcompare.Tail(string(out)))
	}
	return bin, nil
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	prod, cons, both := e.producers(size), e.consumers(size), e.publishConsume(size)
	var all []toolcompare.Measurement
	ms, err := toolcompare.Rounds(ctx, e.runThenDelete, prod, "producer", size, o.Records, o.Reps,
		func(rep, i int) string { return fmt.Sprintf("p-%d-%d-%d", size, rep, i) })
	all = append(all, ms...)
	if err != nil {
		return all, err
	}
	// One stream, filled once by brokerbench (so that every message
	// carries its header and counts as consumed), read by every consumer.
	fill := fmt.Sprintf("fill-%d", size)
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: fill, Subjects: []string{fill + ".0"}, Storage: jetstream.FileStorage}); err != nil {
		return all, fmt.Errorf("create stream %s: %w", fill, err)
	}
	filler := e.brokerbench(size, "fill", "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n", fill, toolcompare.PublishRate)[0]
	if _, err := toolcompare.Run(ctx, filler, "fill", size, o.Records, 0, fill); err != nil {
		return all, err
	}
	// The consumers read what the stream holds: a send that failed on a
	// loaded machine would leave each of them waiting for it forever.
	info, err := e.js.Stream(ctx, fill)
	if err != nil {
		return all, fmt.Errorf("count the messages of stream %s: %w", fill, err)
	}
	stored := int64(info.CachedInfo().State.Msgs)
	if stored != o.Records {
		fmt.Printf("the fill stored %d of %d messages: the consumers read %d\n", stored, o.Records, stored)
	}
	ms, err = toolcompare.Rounds(ctx, e.consumeFrom(fill), cons, "consumer", size, stored, o.Reps,
		func(rep, i int) string { return fmt.Sprintf("c-%d-%d-%d", size, rep, i) })
	all = append(all, ms...)
	if err != nil {
		return all, err
	}
	_ = e.js.DeleteStream(ctx, fill)
	ms, err = toolcompare.Rounds(ctx, toolcompare.Run, both, "publish+consume", size, o.Records, o.Reps,
		func(rep, i int) string { return fmt.Sprintf("b-%d-%d-%d", size, rep, i) })
	all = append(all, ms...)
	if err != nil {
		return all, err
	}
	toolcompare.Report(all,
		toolcompare.Side{Role: "producer", Tools: prod, Peers: toolcompare.Peers(prod)},
		toolcompare.Side{Role: "consumer", Tools: cons, Peers: toolcompare.Peers(cons)},
		toolcompare.Side{Role: "publish+consume", Tools: both, Peers: toolcompare.Peers(both)})
	return all, nil
}

// runThenDelete runs a producer and deletes the stream it filled (the
// bare loop keeps its stream; brokerbench deletes its own).
func (e *env) runThenDelete(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, stream string) (toolcompare.Measurement, error) {
	m, err := toolcompare.Run(ctx, t, role, size, records, rep, stream)
	if err := e.js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return m, fmt.Errorf("delete stream %s: %w", stream, err)
	}
	return m, err
}

// consumeFrom runs a consumer on the filled stream; durable names the
// new durable consumer of the run, which the runner creates for nats
// bench (it reads from an existing one) and the others create themselves.
func (e *env) consumeFrom(stream string) toolcompare.RunFunc {
	return func(ctx context.Context, t toolcompare.Tool, role string, size int, records int64, rep int, durable string) (toolcompare.Measurement, error) {
		if t.Name == natsBench {
			if _, err := e.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: durable, AckPolicy: jetstream.AckExplicitPolicy,
				DeliverPolicy: jetstream.DeliverAllPolicy, MaxAckPending: maxAckPending, AckWait: 30 * time.Second}); err != nil {
				return toolcompare.Measurement{}, fmt.Errorf("consumer %s for nats bench: %w", durable, err)
			}
		}
		m, err := toolcompare.Run(ctx, t, role, size, records, rep, durable)
		if err := e.js.DeleteConsumer(ctx, stream, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return m, fmt.Errorf("delete consumer %s: %w", durable, err)
		}
		return m, err
	}
}

func (e *env) producers(size int) []toolcompare.Tool {
	return append([]toolcompare.Tool{
		{Name: natsBench, Cmd: func(stream string, n int64) []string {
			return []string{e.natscli, "--server", e.url, "bench", "js", "pub", "async", stream, "--create", "--stream", stream,
				"--msgs", strconv.FormatInt(n, 10), "--size", strconv.Itoa(size), "--batch", strconv.Itoa(fetchBatch), "--no-progress"}
		}, Rate: natsBenchRate},
		e.bare(size, "-consume=false"),
	}, e.brokerbench(size, "producer", "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n", "", toolcompare.PublishRate)...)
}

func (e *env) consumers(size int) []toolcompare.Tool {
	stream := fmt.Sprintf("fill-%d", size)
	return append([]toolcompare.Tool{
		{Name: natsBench, Cmd: func(durable string, n int64) []string {
			return []string{e.natscli, "--server", e.url, "bench", "js", "consume", "--stream", stream, "--consumer", durable,
				"--msgs", strconv.FormatInt(n, 10), "--batch", strconv.Itoa(fetchBatch), "--acks", "explicit", "--no-progress"}
		}, Rate: natsBenchRate},
		e.bare(size, "-produce=false", "-stream", stream),
	}, e.brokerbench(size, "consumer", "producersPerTopic: 0\nsubscriptionsPerTopic: 1\nconsumersPerSubscription: 1\n", stream, toolcompare.ConsumeRate)...)
}

func (e *env) publishConsume(size int) []toolcompare.Tool {
	return append([]toolcompare.Tool{e.bare(size)},
		e.brokerbench(size, "publish-consume", "producersPerTopic: 1\nsubscriptionsPerTopic: 1\nconsumersPerSubscription: 1\n", "", toolcompare.LastDeliveryRate)...)
}

// bare is barenats with the driver's settings and extra flags; its
// stream (or durable consumer, with -produce=false) is the run's name.
func (e *env) bare(size int, extra ...string) toolcompare.Tool {
	named := "-stream"
	if len(extra) > 0 && extra[0] == "-produce=false" {
		named = "-durable"
	}
	return toolcompare.Tool{Name: bare, Cmd: func(name string, n int64) []string {
		return append([]string{filepath.Join(e.dir, "barenats"), "-url", e.url, named, name, "-records", strconv.FormatInt(n, 10),
			"-size", strconv.Itoa(size), "-pending", strconv.Itoa(pubWindow), "-batch", strconv.Itoa(fetchBatch),
			"-max-ack-pending", strconv.Itoa(maxAckPending)}, extra...)
	}, Rate: toolcompare.KeyRate}
}

// brokerbench is brokerbench on a workload of the given clients (on an
// existing stream, which it keeps, if one is named), and with -baseline
// brokerbench at that revision too; rate reads its results.
func (e *env) brokerbench(size int, role, clients, stream string, rate func(*results.Run) float64) []toolcompare.Tool {
	wl := filepath.Join(e.dir, fmt.Sprintf("%s-%d.yaml", role, size))
	text := fmt.Sprintf("name: compare-nats-%s-%d\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: %d\n%srate: 0\nwarmup: 0s\nduration: 10m\n"+
		"driver:\n  driver: nats\n  producerConfig: {maxPending: \"%d\"}\n  consumerConfig: {fetchBatch: \"%d\", maxAckPending: \"%d\"}\n",
		role, size, size, clients, pubWindow, fetchBatch, maxAckPending)
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		panic(err)
	}
	var topic func(string) string
	if stream != "" {
		topic = func(string) string { return stream }
	}
	return toolcompare.Brokerbench(e.dir, e.baseline, wl, e.url, topic, rate)
}

// natsBenchRate reads the messages per second from nats bench's stats
// line ("... stats: 121,594 msgs/sec ~ ...").
func natsBenchRate(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		if _, after, ok := strings.Cut(line, " stats: "); ok {
			rate, _, _ := strings.Cut(after, " msgs/sec")
			return strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(rate), ",", ""), 64)
		}
	}
	return 0, errors.New("no 'stats: N msgs/sec' line in nats bench's output")
}
