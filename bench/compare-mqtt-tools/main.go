// Command compare-mqtt-tools measures brokerbench's MQTT 5 load generator
// side by side with a bare paho.golang loop (bench/baremqtt, the client
// library's ceiling), against one local Mosquitto it starts as
// 'brokerbench local up mosquitto' does. No MQTT 5 benchmark tool of the
// broker's own or of a third party installs here (bench/README.md), so
// the bare loop is the only peer.
//
// Every run publishes at QoS 1 to a fresh topic, flat out, at most 32 MiB
// / size and at most 16,384 messages awaiting their PUBACK; the order of
// the tools rotates every repetition. Two sides:
//
//   - producer: the publisher alone (no subscriber: the server drops
//     what it receives);
//   - publish+consume: one publisher and one consumer of a shared
//     subscription in one process, with the driver's defaults (receive
//     maximum 256); the rate is the records from the first publish to the
//     last delivery. A subscription receives only what is published after
//     it exists, so there is no consumer on its own.
//
// It reports messages per second (by the tool's own clock, and by wall
// time including start-up), the client process's CPU seconds (getrusage
// of that child only, the server excluded), messages per CPU-second with
// and without start-up, and the ratio brokerbench / bare as
// min/median/max over the repetitions.
//
//	go run ./bench/compare-mqtt-tools                  # 300k x 100 B, 3 repetitions
//	go run ./bench/compare-mqtt-tools -baseline HEAD~1 # and brokerbench as it was, in the same sitting
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokers/mqtt"
	"github.com/brokerbench/brokerbench/internal/results"
)

const bare = "bare paho.golang"

func main() {
	toolcompare.Main("compare-mqtt-tools", toolcompare.Options{Records: 300_000, Sizes: []int{100}, Reps: 3, Port: 29884, Out: "bench/results/compare-mqtt-tools.json"}, run)
}

type env struct {
	dir, addr, baseline string
}

func run(ctx context.Context, o toolcompare.Options) error {
	dir, err := toolcompare.Workdir(ctx, "compare-mqtt-tools", "baremqtt", o.Baseline)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, stopBroker, err := toolcompare.Up(ctx, mqtt.NewLocal(o.Port, 1), dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	e := &env{dir: dir, addr: st.Address(), baseline: o.Baseline}
	return toolcompare.EachSize(o, func(size int) ([]toolcompare.Measurement, error) {
		return e.compare(ctx, o, size)
	})
}

func (e *env) compare(ctx context.Context, o toolcompare.Options, size int) ([]toolcompare.Measurement, error) {
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	prod := append([]toolcompare.Tool{e.bare(size, "-consume=false")},
		e.brokerbench(size, "producer", "producersPerTopic: 1\nsubscriptionsPerTopic: 0\n", toolcompare.PublishRate)...)
	both := append([]toolcompare.Tool{e.bare(size)},
		e.brokerbench(size, "publish-consume", "producersPerTopic: 1\nsubscriptionsPerTopic: 1\nconsumersPerSubscription: 1\n", toolcompare.LastDeliveryRate)...)
	var all []toolcompare.Measurement
	for _, side := range []struct {
		role, prefix string
		tools        []toolcompare.Tool
	}{{"producer", "p", prod}, {"publish+consume", "b", both}} {
		ms, err := toolcompare.Rounds(ctx, toolcompare.Run, side.tools, side.role, size, o.Records, o.Reps,
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

// bare is baremqtt with the driver's settings and extra flags, on the
// run's topic.
func (e *env) bare(size int, extra ...string) toolcompare.Tool {
	return toolcompare.Tool{Name: bare, Cmd: func(topic string, n int64) []string {
		return append([]string{filepath.Join(e.dir, "baremqtt"), "-addr", e.addr, "-topic", topic, "-records", strconv.FormatInt(n, 10),
			"-size", strconv.Itoa(size), "-pending", strconv.Itoa(toolcompare.InFlight(size))}, extra...)
	}, Rate: toolcompare.KeyRate}
}

// brokerbench is brokerbench on a workload of the given clients at QoS
// 1, and with -baseline brokerbench at that revision too; rate reads its
// results.
func (e *env) brokerbench(size int, role, clients string, rate func(*results.Run) float64) []toolcompare.Tool {
	wl := filepath.Join(e.dir, fmt.Sprintf("%s-%d.yaml", role, size))
	text := fmt.Sprintf("name: compare-mqtt-%s-%d\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: %d\n%srate: 0\nwarmup: 0s\nduration: 10m\n"+
		"driver:\n  driver: mqtt\n  commonConfig: {qos: \"1\"}\n", role, size, size, clients)
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		panic(err)
	}
	return toolcompare.Brokerbench(e.dir, e.baseline, wl, "tcp://"+e.addr, nil, rate)
}
