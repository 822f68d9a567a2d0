// Command compare-omb runs the real OpenMessaging Benchmark (OMB, Java,
// local mode) and brokerbench side by side on the same OMB workload and
// driver files against the same local broker, and prints what each client
// process cost per message.
//
// It builds OMB from a checkout of its source repository given with -omb:
// only the framework, the driver API and the drivers under test, from a
// copy of their sources in a temporary directory (the checkout is left as
// it is), with their dependencies from Maven Central (OMB itself is not
// published there). It starts one local broker per -brokers entry (Kafka,
// RabbitMQ, NATS JetStream, Redis, Pulsar, Artemis, RocketMQ; the same install cache as
// 'brokerbench local up'), one after another, writes a copy of OMB's own
// driver file for it with only its address changed and what a single
// node requires (a replication factor of 1, say: see each broker's
// pointAt), and runs each workload -reps times with each tool,
// alternating which goes first. Both run from the checkout's root, as OMB
// does, so its payload files resolve for both. A broker that fails is
// reported, and the comparison goes on with the next.
//
// For each run it records the messages published in the measurement and
// the publish rate, each from the tool's own result JSON (OMB's
// publishRate intervals, brokerbench's acknowledged count); the broker's
// count of the messages the run published (every message the process
// published in its life, counted the same way for both: the messages it
// holds, or where its queues drop what is consumed, its counter of
// messages received, read before and after the run); the client
// process's CPU seconds (user+system, its rusage, the broker excluded)
// and its peak resident set. CPU per message is the process's CPU over
// the broker's count: OMB's intervals stretch beyond their 10 s on a busy
// machine, and its result does not say by how much. It prints min /
// median / max over the repetitions with the ratios OMB / brokerbench of
// CPU seconds per message, of memory and of the publish rate, paired
// repetition by repetition. OMB's JVM does not exit after writing its
// results: the comparison reads the result JSON, then stops the JVM's
// process group by PID and checks it is gone; its CPU and memory are the
// JVM's up to then. An OMB run that has written no result 3 minutes
// after its workload's time is called hung, and its group is killed.
// OMB's JVM runs with bin/benchmark's settings, a fixed heap of 4 GiB by
// default (-omb-heap): its resident set grows into that heap, so the
// memory ratio says what OMB takes as it is shipped, not what it needs.
//
// The default workloads (bench/workloads/omb-*.yaml) are a fixed 20,000
// msg/s of 1 KB and OMB's max-rate convention with 100 B, each one minute
// without warmup, on one topic of 16 partitions (of one for RabbitMQ,
// whose OMB driver refuses more). With the defaults (3 repetitions) the whole comparison
// takes 15 to 20 minutes, the OMB build (1 to 3 minutes) included.
//
//	go run ./bench/compare-omb -omb ~/src/openmessaging-benchmark
//	go run ./bench/compare-omb -omb ~/src/openmessaging-benchmark -brokers rabbitmq,nats,redis,pulsar -reps 1
//	go run ./bench/compare-omb -omb ../omb -reps 1 -workload ../omb/workloads/1-topic-16-partitions-1kb.yaml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/results"
)

// options are the command's flags.
type options struct {
	omb       string
	brokers   string
	workloads string
	reps      int
	port      int
	out       string
	heap      string
}

// defaultWorkloads are the comparison's canonical OMB workloads, relative
// to the repository's root.
var defaultWorkloads = []string{"bench/workloads/omb-fixed-20k-1kb.yaml", "bench/workloads/omb-max-rate-100b.yaml"}

func main() {
	var o options
	flag.StringVar(&o.omb, "omb", "", "checkout of OMB's source repository (https://github.com/openmessaging/benchmark); required")
	flag.StringVar(&o.brokers, "brokers", "kafka", "brokers to compare on, comma-separated (supported: "+brokerNames+")")
	flag.StringVar(&o.workloads, "workload", "", "OMB workload files, comma-separated; both tools run each unchanged (default: "+
		strings.Join(defaultWorkloads, ",")+", or their single-partition copies for a broker whose OMB driver takes no more)")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each tool on each workload")
	flag.IntVar(&o.port, "port", 29566, "port of the broker this command starts on 127.0.0.1")
	flag.StringVar(&o.heap, "omb-heap", "4G", "OMB's JVM heap, -Xms and -Xmx as its bin/benchmark sets them (its default: 4G)")
	flag.StringVar(&o.out, "out", "bench/results/compare-omb.json", "where to write every measurement as JSON")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "compare-omb:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.reps < 1 {
		return errors.New("-reps must be at least 1")
	}
	var under []broker
	var modules []string
	for _, name := range strings.Split(o.brokers, ",") {
		b, ok := brokers[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("-brokers: %q is not a broker this comparison supports (%s)", name, brokerNames)
		}
		if _, err := workloadsOf(b, o.workloads); err != nil {
			return err
		}
		under, modules = append(under, b), append(modules, b.module)
	}
	omb, err := readCheckout(ctx, o.omb, modules)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "compare-omb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Println("building brokerbench")
	if err := toolcompare.Build(ctx, dir, [2]string{"brokerbench", "./cmd/brokerbench"}); err != nil {
		return err
	}
	fmt.Printf("building OMB at %s (framework, %s) with Maven\n", omb.commit, strings.Join(modules, ", "))
	started := time.Now()
	build := filepath.Join(dir, "omb-build")
	if err := os.Mkdir(build, 0o755); err != nil {
		return err
	}
	classpath, err := buildOMB(ctx, omb, build, modules)
	if err != nil {
		return err
	}
	fmt.Printf("built OMB in %.0f s\n", time.Since(started).Seconds())
	r := &runs{dir: dir, omb: omb, classpath: classpath, brokerbench: filepath.Join(dir, "brokerbench"), heap: o.heap}
	var all []measurement
	var errs []error
	for _, b := range under {
		workloads, _ := workloadsOf(b, o.workloads)
		ms, err := r.compare(ctx, b, o, workloads)
		all = append(all, ms...)
		if err != nil {
			fmt.Printf("\n%s: %v\n", b.name, err)
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(append(errs, write(o.out, all))...)
}

// workloadsOf returns the absolute paths of the workloads b runs: those
// -workload names (list), else b's defaults, else the comparison's.
func workloadsOf(b broker, list string) ([]string, error) {
	names := defaultWorkloads
	if b.workloads != nil {
		names = b.workloads
	}
	if list != "" {
		names = strings.Split(list, ",")
	}
	var abs []string
	for _, w := range names {
		a, err := filepath.Abs(strings.TrimSpace(w))
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(a); err != nil {
			return nil, fmt.Errorf("-workload: %w (run from the repository's root for the default ones)", err)
		}
		abs = append(abs, a)
	}
	return abs, nil
}

// write writes every measurement to out, if there is any.
func write(out string, ms []measurement) error {
	if len(ms) == 0 {
		return nil
	}
	if err := results.Write(out, ms); err != nil {
		return err
	}
	fmt.Printf("\nall measurements: %s\n", out)
	return nil
}
