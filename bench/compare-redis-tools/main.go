// Command compare-redis-tools measures brokerbench's Redis Streams
// producer side by side with redis-benchmark (Debian's redis-tools) and
// with a bare go-redis loop (bench/bareredis, the client library's
// ceiling), against one local Redis server it starts itself.
//
// Every tool appends a fixed number of entries with XADD to one stream,
// in pipelines of 100 over one connection, flat out; the order of the
// tools rotates every repetition. redis-benchmark has no consumer-group
// mode, so only producing is compared. It reports messages per second
// (by the tool's own clock, and by wall time including start-up), the
// client process's CPU seconds (getrusage of that child only, the server
// excluded), messages per CPU-second with and without start-up, and the
// ratios brokerbench/redis-benchmark and brokerbench/bare as
// min/median/max over the repetitions.
//
//	go run ./bench/compare-redis-tools                 # 1M x 100 B, 3 repetitions
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
)

type options struct {
	records int64
	size    int
	reps    int
	port    int
	out     string
}

func main() {
	var o options
	flag.Int64Var(&o.records, "records", 1_000_000, "entries per run")
	flag.IntVar(&o.size, "size", 100, "message size in bytes (at least 22)")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each tool")
	flag.IntVar(&o.port, "port", 39380, "port of the server this command starts on 127.0.0.1")
	flag.StringVar(&o.out, "out", "bench/results/compare-redis-tools.json", "where to write every measurement as JSON")
	flag.Parse()
	if o.size < 22 {
		fatal(fmt.Errorf("-size %d: brokerbench's messages are at least 22 bytes", o.size))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "compare-redis-tools:", err)
	os.Exit(1)
}

const role = "producer"

func run(ctx context.Context, o options) error {
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return errors.New("redis-benchmark is not installed (Debian: apt-get install redis-tools)")
	}
	dir, err := os.MkdirTemp("", "compare-redis-tools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Println("building brokerbench and bareredis")
	for _, b := range [][2]string{{"brokerbench", "./cmd/brokerbench"}, {"bareredis", "./bench/bareredis"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s (run from the repository root): %w\n%s", b[1], err, out)
		}
	}
	r := local.NewRedis(o.port, 1)
	r.StateDir = filepath.Join(dir, "redis")
	r.Log = os.Stdout
	st, err := r.Up(ctx)
	if err != nil {
		_ = r.Down()
		return err
	}
	defer func() { _ = r.Down() }()
	host, port, _ := strings.Cut(st.Address(), ":")
	wl := filepath.Join(dir, "producer.yaml")
	if err := os.WriteFile(wl, []byte(fmt.Sprintf("name: compare-redis-%d\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: %d\nproducersPerTopic: 1\nsubscriptionsPerTopic: 0\nrate: 0\nwarmup: 0s\nduration: 10m\n"+
		"driver:\n  driver: redis\n  producerConfig: {maxPipeline: \"100\"}\n", o.size, o.size)), 0o644); err != nil {
		return err
	}
	value := strings.Repeat("x", o.size)
	tools := []toolcompare.Tool{
		{Name: "redis-benchmark", Cmd: func(stream string, n int64) []string {
			return []string{bench, "-h", host, "-p", port, "-c", "1", "-P", "100", "-n", strconv.FormatInt(n, 10), "--csv", "XADD", stream, "*", "v", value}
		}, Rate: redisBenchmarkRate},
		{Name: "brokerbench", Cmd: func(_ string, n int64) []string {
			return []string{filepath.Join(dir, "brokerbench"), "run", wl, "--broker", st.Address(),
				"--messages", strconv.FormatInt(n, 10), "--quiet", "-o", filepath.Join(dir, "bb.json")}
		}, Rate: func(string) (float64, error) {
			res, err := results.Read(filepath.Join(dir, "bb.json"))
			if err != nil {
				return 0, err
			}
			return res.Measured.PublishRate, nil
		}},
		{Name: "bare go-redis", Cmd: func(stream string, n int64) []string {
			return []string{filepath.Join(dir, "bareredis"), "-addr", st.Address(), "-stream", stream,
				"-records", strconv.FormatInt(n, 10), "-size", strconv.Itoa(o.size)}
		}, Rate: toolcompare.KeyRate},
	}
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", o.size, o.records, o.reps)
	var ms []toolcompare.Measurement
	startup := map[string]float64{}
	for _, t := range tools {
		m, err := toolcompare.Run(ctx, t, role, o.size, 1, 0, fmt.Sprintf("startup-%d", time.Now().UnixNano()))
		if err != nil {
			return err
		}
		startup[t.Name] = m.CPU
	}
	for rep := range o.reps {
		for i := range tools {
			t := tools[(i+rep)%len(tools)]
			m, err := toolcompare.Run(ctx, t, role, o.size, o.records, rep, fmt.Sprintf("s-%d-%d", rep, i))
			if err != nil {
				return err
			}
			m.Startup = startup[t.Name]
			ms = append(ms, m)
		}
	}
	toolcompare.Report(ms, toolcompare.Side{Role: role, Tools: tools, Peers: []string{"redis-benchmark", "bare go-redis"}})
	if err := results.Write(o.out, ms); err != nil {
		return err
	}
	fmt.Printf("\nall measurements: %s\n", o.out)
	return nil
}

// redisBenchmarkRate reads the requests per second from redis-benchmark's
// CSV line ("test","rps",...).
func redisBenchmarkRate(out string) (float64, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 2 && strings.HasPrefix(f[0], `"XADD`) {
			return strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		}
	}
	return 0, errors.New("no XADD line in redis-benchmark's CSV output")
}
