// Command metrics-cost measures what reading a local Kafka broker's
// metrics costs the broker: the CPU its JMX exporter spends per read, and
// the change in the broker's CPU and in publish latency when a run reads
// the metrics every interval. It starts one broker of its own, as
// 'brokerbench local up kafka' does (same exporter, same config), and
// stops it by PID at the end.
//
//	go run ./bench/metrics-cost                      # 240 s under load, then 8 idle rounds of 60 reads
//	go run ./bench/metrics-cost -duration 0          # idle rounds only
//	go run ./bench/metrics-cost -config my-jmx.yaml  # another exporter config (the exporter reloads it)
//
// CPU is the broker process's own (utime+stime from /proc/PID/stat, all
// its threads), so the figures hold on a machine other processes share:
// what they use is not charged to the broker. The exporter's own threads
// (its HTTP workers and dispatcher) are also counted apart: the part of
// the cost that no other work of the broker blurs.
//
// Under load, paired in one run: brokerbench runs the workload (default
// workloads/quick.yaml at 5,000 msg/s) against the broker without reading
// its metrics; this command reads them instead, through brokermetrics as
// runs do, at the start of one interval of each pair of consecutive
// intervals, chosen at random. Each interval gets the broker's CPU over it
// and the run's publish latency in it; the pairs give the difference with
// and without a read, with a 95% confidence interval.
//
// Idle, back to back: rounds of N reads in a row, each against a span of
// the same length without reads, in alternating order; the broker's extra
// CPU divided by N is the CPU per read.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/results"
)

// clockTicks is USER_HZ, the unit of /proc CPU times.
const clockTicks = 100

type options struct {
	workload      string
	rate          float64
	warmup, dur   time.Duration
	reads, rounds int
	port          int
	config, out   string
	bin           string
	seed          uint64
}

func main() {
	var o options
	flag.StringVar(&o.workload, "workload", "workloads/quick.yaml", "workload of the run under load")
	flag.Float64Var(&o.rate, "rate", 5000, "producer rate of the run under load, msg/s")
	flag.DurationVar(&o.warmup, "warmup", 20*time.Second, "warmup of the run under load")
	flag.DurationVar(&o.dur, "duration", 240*time.Second, "measurement of the run under load (0: no run)")
	flag.IntVar(&o.reads, "reads", 60, "reads in a row per idle round")
	flag.IntVar(&o.rounds, "rounds", 8, "idle rounds (0: none)")
	flag.IntVar(&o.port, "port", 29793, "client port of the broker this command starts on 127.0.0.1")
	flag.StringVar(&o.config, "config", "", "JMX exporter config to measure instead of the one brokerbench writes")
	flag.StringVar(&o.bin, "brokerbench", "", "brokerbench binary of the run under load (default: built from this tree)")
	flag.StringVar(&o.out, "out", "bench/results/metrics-cost.json", "where to write every measurement as JSON")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the choice of the read interval in each pair")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		stop()
		fmt.Fprintf(os.Stderr, "metrics-cost: %v\n", err)
		os.Exit(1)
	}
}

// report is everything measured, as written to -out.
type report struct {
	Config string      `json:"config"` // "brokerbench" or the file given
	Series int         `json:"series"` // series one read returns
	Load   *loadResult `json:"load,omitempty"`
	Idle   *idleResult `json:"idle,omitempty"`
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "metrics-cost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.bin
	if bin == "" && o.dur > 0 {
		fmt.Println("building brokerbench")
		if err := toolcompare.Build(ctx, dir, [2]string{"brokerbench", "./cmd/brokerbench"}); err != nil {
			return err
		}
		bin = filepath.Join(dir, "brokerbench")
	}
	k := kafka.NewLocal(o.port, 1)
	k.HeapMB = 1024
	st, stopBroker, err := toolcompare.Up(ctx, k, dir)
	if err != nil {
		return err
	}
	defer stopBroker()
	node := st.Nodes[0]
	if node.MetricsURL == "" || node.PID == 0 {
		return fmt.Errorf("the broker serves no metrics endpoint or has no PID: %+v", node)
	}
	rep := report{Config: "brokerbench"}
	if o.config != "" {
		if err := useConfig(o.config, node.ConfigFile("jmx-exporter.yaml")); err != nil {
			return err
		}
		rep.Config = o.config
	}
	b := &broker{pid: node.PID, scraper: brokermetrics.New([]brokermetrics.Target{{Node: 1, URL: node.MetricsURL}})}
	// The exporter's code is interpreted at first: warm it up, as the
	// first intervals of any run do.
	for range 100 {
		rep.Series = max(rep.Series, len(b.scraper.Sample()))
	}
	if rep.Series == 0 {
		return fmt.Errorf("%s: no series read", node.MetricsURL)
	}
	fmt.Printf("broker pid %d, metrics %s (%s config): %d series per read\n", node.PID, node.MetricsURL, rep.Config, rep.Series)

	if o.dur > 0 {
		if rep.Load, err = b.underLoad(ctx, o, bin, st.Address(), filepath.Join(dir, "run.json")); err != nil {
			return err
		}
		rep.Load.print()
		time.Sleep(5 * time.Second) // the run's topic deletion
	}
	if o.rounds > 0 {
		if rep.Idle, err = b.idle(ctx, o.rounds, o.reads); err != nil {
			return err
		}
		rep.Idle.print(rep.Load)
	}
	if err := results.Write(o.out, rep); err != nil {
		return err
	}
	fmt.Printf("\nall measurements: %s\n", o.out)
	return nil
}

// useConfig copies the exporter config at path over the node's, config;
// the exporter reloads it at its next read.
func useConfig(path, config string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(config, data, 0o644); err != nil {
		return err
	}
	// The exporter reloads a file newer than the one it read.
	later := time.Now().Add(2 * time.Second)
	return os.Chtimes(config, later, later)
}

// broker is the broker process under measurement and a reader of its
// metrics.
type broker struct {
	pid     int
	scraper *brokermetrics.Scraper
	// threads holds the CPU ticks each thread of a group had at the last
	// look, and groups the sum of the growth of each group's threads.
	threads map[int]int64
	groups  map[string]int64
	// failed counts the reads that got no answer in time.
	failed int
}

// threadGroups are the broker's threads counted apart, by the prefixes of
// their names (as the kernel keeps them, 15 bytes): the exporter's HTTP
// workers and the JDK HTTP server's dispatcher, which do the reads; the
// JIT compilers and the garbage collector, which work for any code,
// reads included.
var threadGroups = []struct {
	name     string
	prefixes []string
}{
	{"exporter", []string{"prometheus-http", "HTTP-Dispatcher"}},
	{"compiler", []string{"C2 CompilerThre", "C1 CompilerThre"}},
	{"gc", []string{"GC Thread", "G1 "}},
}

func threadGroup(comm string) string {
	for _, g := range threadGroups {
		if slices.ContainsFunc(g.prefixes, func(p string) bool { return strings.HasPrefix(comm, p) }) {
			return g.name
		}
	}
	return ""
}

// groupTicks returns the CPU ticks each thread group has used since the
// first call. A thread that ends between two calls loses what it used
// since the earlier one; these threads live as long as the JVM, or as its
// pool keeps them.
func (b *broker) groupTicks() (map[string]int64, error) {
	dir := fmt.Sprintf("/proc/%d/task", b.pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("broker threads: %w", err)
	}
	if b.groups == nil {
		b.threads, b.groups = map[int]int64{}, map[string]int64{}
	}
	seen := map[int]int64{}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(dir, t.Name(), "comm"))
		g := threadGroup(string(comm))
		if err != nil || g == "" {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			continue // ended
		}
		ticks, err := statTicks(string(stat))
		if err != nil {
			return nil, err
		}
		seen[tid] = ticks
		b.groups[g] += ticks - b.threads[tid]
	}
	b.threads = seen
	return maps.Clone(b.groups), nil
}

// snapshot is the broker's CPU at one moment: the process's and each
// thread group's, in ticks.
type snapshot struct {
	at     time.Time
	total  int64
	groups map[string]int64
}

func (b *broker) snapshot() (snapshot, error) {
	g, err := b.groupTicks()
	if err != nil {
		return snapshot{}, err
	}
	t, err := b.ticks()
	return snapshot{at: time.Now(), total: t, groups: g}, err
}

// since returns the ticks of the process and of each group from s0 to s.
func (s snapshot) since(s0 snapshot) (int64, map[string]int64) {
	g := map[string]int64{}
	for _, tg := range threadGroups {
		g[tg.name] = s.groups[tg.name] - s0.groups[tg.name]
	}
	return s.total - s0.total, g
}

// ticks returns the broker process's CPU time so far (all its threads,
// user and system) in clock ticks.
func (b *broker) ticks() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.pid))
	if err != nil {
		return 0, fmt.Errorf("broker CPU: %w", err)
	}
	return statTicks(string(data))
}

// statTicks reads utime+stime from the text of /proc/PID/stat.
func statTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat %q: too short", stat)
	}
	// Fields 14 and 15 of the line; f starts at field 3.
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return u + s, nil
}

// read reads the broker's metrics once, as a run does every interval. A
// read that brokermetrics gives up on (it waits 400 ms) is counted: the
// exporter spent the CPU all the same.
func (b *broker) read() {
	if b.scraper.Sample() == nil {
		b.failed++
	}
}

// idleResult is the back-to-back measurement.
type idleResult struct {
	Rounds []idleRound `json:"rounds"`
	// CPUMsPerRead is the median of the rounds' figures, and
	// GroupMsPerRead the median of each thread group's CPU in the reads,
	// per read.
	CPUMsPerRead   float64            `json:"cpuMsPerRead"`
	GroupMsPerRead map[string]float64 `json:"groupMsPerRead"`
	WallMsPerRead  float64            `json:"wallMsPerRead"`
}

// idleRound is N reads in a row against a span of the same length
// without.
type idleRound struct {
	Reads        int     `json:"reads"`
	SpanMs       float64 `json:"spanMs"`
	ReadTicks    int64   `json:"readTicks"`
	QuietTicks   int64   `json:"quietTicks"`
	CPUMsPerRead float64 `json:"cpuMsPerRead"`
	// GroupTicks is what each thread group used in the reads.
	GroupTicks map[string]int64 `json:"groupTicks"`
	// Unanswered counts the reads brokermetrics gave up on.
	Unanswered int `json:"unanswered"`
}

func (b *broker) idle(ctx context.Context, rounds, n int) (*idleResult, error) {
	fmt.Printf("\nidle: %d rounds of %d reads in a row, each against as long without\n", rounds, n)
	res := &idleResult{GroupMsPerRead: map[string]float64{}}
	var cost, wall []float64
	groups := map[string][]float64{}
	for r := range rounds {
		rd := idleRound{Reads: n}
		reads := func() error {
			s0, err := b.snapshot()
			if err != nil {
				return err
			}
			failed := b.failed
			for range n {
				b.read()
			}
			s1, err := b.snapshot()
			rd.Unanswered = b.failed - failed
			rd.SpanMs = float64(s1.at.Sub(s0.at).Microseconds()) / 1000
			rd.ReadTicks, rd.GroupTicks = s1.since(s0)
			return err
		}
		quiet := func(span time.Duration) (int64, error) {
			t0, err := b.ticks()
			if err != nil {
				return 0, err
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(span):
			}
			t1, err := b.ticks()
			return t1 - t0, err
		}
		// Alternate the order, so that a trend in the broker's own work
		// does not always land on the same side.
		var err error
		if r%2 == 0 {
			if err = reads(); err == nil {
				rd.QuietTicks, err = quiet(time.Duration(rd.SpanMs * float64(time.Millisecond)))
			}
		} else {
			// The span is not known before the reads: take the last
			// round's, and scale what the broker used in it to this
			// round's.
			last := res.Rounds[r-1].SpanMs
			var q int64
			if q, err = quiet(time.Duration(last * float64(time.Millisecond))); err == nil {
				err = reads()
				rd.QuietTicks = int64(math.Round(float64(q) * rd.SpanMs / last))
			}
		}
		if err != nil {
			return nil, err
		}
		rd.CPUMsPerRead = ticksMs(rd.ReadTicks-rd.QuietTicks) / float64(n)
		fmt.Printf("  round %d: %d reads in %.0f ms (%d unanswered), broker %d ticks (%s); without reads %d ticks: %.2f CPU-ms per read\n",
			r+1, n, rd.SpanMs, rd.Unanswered, rd.ReadTicks, groupWords(rd.GroupTicks), rd.QuietTicks, rd.CPUMsPerRead)
		res.Rounds = append(res.Rounds, rd)
		cost = append(cost, rd.CPUMsPerRead)
		for g, t := range rd.GroupTicks {
			groups[g] = append(groups[g], ticksMs(t)/float64(n))
		}
		wall = append(wall, rd.SpanMs/float64(n))
	}
	res.CPUMsPerRead, res.WallMsPerRead = median(cost), median(wall)
	for g, v := range groups {
		res.GroupMsPerRead[g] = median(v)
	}
	return res, nil
}

func ticksMs(t int64) float64 { return float64(t) * 1000 / clockTicks }

// groupWords says what each thread group used, in ticks.
func groupWords(g map[string]int64) string {
	var w []string
	for _, tg := range threadGroups {
		w = append(w, fmt.Sprintf("%s %d", tg.name, g[tg.name]))
	}
	return strings.Join(w, ", ")
}

func (r *idleResult) print(load *loadResult) {
	var cost []float64
	for _, rd := range r.Rounds {
		cost = append(cost, rd.CPUMsPerRead)
	}
	var groups []string
	for _, tg := range threadGroups {
		groups = append(groups, fmt.Sprintf("%s %.2f", tg.name, r.GroupMsPerRead[tg.name]))
	}
	fmt.Printf("idle: %.2f CPU-ms per read (median of %d rounds, %.2f to %.2f); by thread group, in the reads: %s; %.1f ms per read by wall time\n",
		r.CPUMsPerRead, len(r.Rounds), slices.Min(cost), slices.Max(cost), strings.Join(groups, ", "), r.WallMsPerRead)
	if load != nil && load.Off.BrokerCPU > 0 {
		// One read per second, against the broker's CPU under load.
		fmt.Printf("  one read per second: %.2f%% of a core, %.2f%% of the broker's CPU under load (%.1f%% of a core without reads)\n",
			r.CPUMsPerRead/10, r.CPUMsPerRead/10/load.Off.BrokerCPU*100, load.Off.BrokerCPU)
	}
}

// interval is one interval of the run under load.
type interval struct {
	N         int     `json:"n"` // its end in whole intervals from the start of producing
	Read      bool    `json:"read"`
	BrokerCPU float64 `json:"brokerCpu"` // percent of one core
	// GroupCPU is the part of BrokerCPU each thread group used.
	GroupCPU   map[string]float64 `json:"groupCpu"`
	PublishP50 float64            `json:"publishP50Ms"`
	PublishP99 float64            `json:"publishP99Ms"`
	PublishAvg float64            `json:"publishMeanMs"`
	Published  int64              `json:"published"`
}

// side sums up the intervals with reads, or without.
type side struct {
	Intervals  int                `json:"intervals"`
	BrokerCPU  float64            `json:"brokerCpu"`    // mean, percent of one core
	GroupCPU   map[string]float64 `json:"groupCpu"`     // means, percent of one core
	PublishP50 float64            `json:"publishP50Ms"` // median of the intervals'
	PublishP99 float64            `json:"publishP99Ms"` // median of the intervals'
	PublishAvg float64            `json:"publishMeanMs"`
}

// diff is the mean of the pairs' differences (with read minus without)
// and its 95% confidence half-width.
type diff struct {
	Mean float64 `json:"mean"`
	CI95 float64 `json:"ci95"`
}

func (d diff) String() string { return fmt.Sprintf("%+.2f ± %.2f", d.Mean, d.CI95) }

type loadResult struct {
	Workload string  `json:"workload"`
	Rate     float64 `json:"rate"`
	Exit     int     `json:"exit"`
	// Unanswered counts the reads brokermetrics gave up on.
	Unanswered int        `json:"unanswered"`
	Intervals  []interval `json:"intervals"`
	Pairs      int        `json:"pairs"`
	On         side       `json:"withRead"`
	Off        side       `json:"withoutRead"`
	// Differences per pair: CPU in percent of a core, latencies in
	// milliseconds.
	BrokerCPU  diff            `json:"brokerCpuDiff"`
	GroupCPU   map[string]diff `json:"groupCpuDiff"`
	PublishP50 diff            `json:"publishP50DiffMs"`
	PublishP99 diff            `json:"publishP99DiffMs"`
	PublishAvg diff            `json:"publishMeanDiffMs"`
}

// progressLine matches a run's progress line: the end of the interval in
// seconds from the start of producing, and its phase.
var progressLine = regexp.MustCompile(`^\s*(\d+\.\d)s (\S+)\s`)

// underLoad runs the workload against addr with bin, reading the broker's
// metrics at the start of one interval of each pair, and measures every
// interval.
func (b *broker) underLoad(ctx context.Context, o options, bin, addr, out string) (*loadResult, error) {
	fmt.Printf("\nunder load: %s at %.0f msg/s, warmup %s, measurement %s; the broker's metrics read at the start of one interval of each pair, chosen at random\n",
		o.workload, o.rate, o.warmup, o.dur)
	cmd := exec.CommandContext(ctx, bin, "run", o.workload, "--broker", addr, "--rate", strconv.FormatFloat(o.rate, 'f', -1, 64),
		"--warmup", o.warmup.String(), "--duration", o.dur.String(), "--interval", "1s", "--out", out)
	var summary strings.Builder
	cmd.Stdout = &summary
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.seed, o.seed))
	failed := b.failed
	read := map[int]bool{}                 // interval -> read at its start
	cpu := map[int]float64{}               // interval -> broker CPU, percent of a core
	groups := map[int]map[string]float64{} // interval -> each thread group's
	var last snapshot
	lastN := -1
	var readErr error
	var other strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		m := progressLine.FindStringSubmatch(line)
		if m == nil {
			fmt.Fprintln(&other, line)
			continue
		}
		end, _ := strconv.ParseFloat(m[1], 64)
		n := int(math.Round(end))
		snap, err := b.snapshot()
		if err != nil {
			readErr = err
			break
		}
		if lastN >= 0 && n == lastN+1 {
			pct := 100.0 / clockTicks / snap.at.Sub(last.at).Seconds()
			total, g := snap.since(last)
			cpu[n], groups[n] = float64(total)*pct, map[string]float64{}
			for k, v := range g {
				groups[n][k] = float64(v) * pct
			}
		}
		last, lastN = snap, n
		// Interval n+1 starts now. Pairs are (1,2), (3,4), ...: the
		// first of a pair is read at random, the second if the first
		// was not.
		next := n + 1
		if next%2 == 1 {
			read[next] = rng.IntN(2) == 0
		} else {
			read[next] = !read[next-1]
		}
		if read[next] {
			b.read()
		}
		if n%30 == 0 {
			fmt.Printf("  %s %s\n", m[1]+"s", m[2])
		}
	}
	if readErr != nil {
		_ = cmd.Process.Kill() // the run is this command's child
	}
	_, _ = io.Copy(io.Discard, stderr)
	werr := cmd.Wait()
	if readErr != nil {
		return nil, readErr
	}
	res := &loadResult{Workload: o.workload, Rate: o.rate, Unanswered: b.failed - failed}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		res.Exit = ee.ExitCode()
	} else if werr != nil {
		return nil, werr
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("the run (exit %d) wrote no results: %w\n%s%s", res.Exit, err, other.String(), summary.String())
	}
	var r results.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the run's results: %w", err)
	}
	for _, iv := range r.Intervals {
		if iv.System != nil && len(iv.System.Broker) > 0 {
			return nil, errors.New("the run read the broker's metrics itself: the intervals without a read would have one")
		}
		n := int(math.Round(iv.EndSeconds))
		c, ok := cpu[n]
		if iv.Phase != results.Measure || !ok || math.Abs(iv.EndSeconds-float64(n)) > 0.05 {
			continue
		}
		res.Intervals = append(res.Intervals, interval{N: n, Read: read[n], BrokerCPU: c, GroupCPU: groups[n],
			PublishP50: iv.PublishLatency.P50, PublishP99: iv.PublishLatency.P99, PublishAvg: iv.PublishLatency.Mean, Published: iv.PublishLatency.Count})
	}
	res.analyse()
	fmt.Print(lastLines(summary.String(), 14))
	return res, nil
}

// analyse pairs intervals (1,2), (3,4), ... that were both measured and
// sums up each side and the pairs' differences.
func (r *loadResult) analyse() {
	byN := map[int]interval{}
	for _, iv := range r.Intervals {
		byN[iv.N] = iv
	}
	var on, off []interval
	var dCPU, d50, d99, dAvg []float64
	dGroup := map[string][]float64{}
	for _, a := range r.Intervals {
		if a.N%2 != 1 {
			continue
		}
		b, ok := byN[a.N+1]
		if !ok || a.Read == b.Read || a.Published == 0 || b.Published == 0 {
			continue
		}
		if b.Read {
			a, b = b, a
		}
		on, off = append(on, a), append(off, b)
		dCPU = append(dCPU, a.BrokerCPU-b.BrokerCPU)
		for _, g := range threadGroups {
			dGroup[g.name] = append(dGroup[g.name], a.GroupCPU[g.name]-b.GroupCPU[g.name])
		}
		d50 = append(d50, a.PublishP50-b.PublishP50)
		d99 = append(d99, a.PublishP99-b.PublishP99)
		dAvg = append(dAvg, a.PublishAvg-b.PublishAvg)
	}
	r.Pairs = len(on)
	r.On, r.Off = sideOf(on), sideOf(off)
	r.BrokerCPU, r.GroupCPU = diffOf(dCPU), map[string]diff{}
	for g, d := range dGroup {
		r.GroupCPU[g] = diffOf(d)
	}
	r.PublishP50, r.PublishP99, r.PublishAvg = diffOf(d50), diffOf(d99), diffOf(dAvg)
}

func sideOf(ivs []interval) side {
	s := side{Intervals: len(ivs), GroupCPU: map[string]float64{}}
	var p50, p99 []float64
	var n int64
	for _, iv := range ivs {
		s.BrokerCPU += iv.BrokerCPU
		for g, v := range iv.GroupCPU {
			s.GroupCPU[g] += v
		}
		p50, p99 = append(p50, iv.PublishP50), append(p99, iv.PublishP99)
		s.PublishAvg += iv.PublishAvg * float64(iv.Published)
		n += iv.Published
	}
	if len(ivs) > 0 {
		s.BrokerCPU /= float64(len(ivs))
		for g := range s.GroupCPU {
			s.GroupCPU[g] /= float64(len(ivs))
		}
	}
	if n > 0 {
		s.PublishAvg /= float64(n)
	}
	s.PublishP50, s.PublishP99 = median(p50), median(p99)
	return s
}

func diffOf(v []float64) diff {
	if len(v) < 2 {
		return diff{}
	}
	var sum, sq float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	for _, x := range v {
		sq += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(sq / float64(len(v)-1))
	return diff{Mean: mean, CI95: 1.96 * sd / math.Sqrt(float64(len(v)))}
}

func (r *loadResult) print() {
	fmt.Printf("under load: %d pairs of 1 s intervals (run exit %d); %d reads unanswered within brokermetrics' 400 ms\n", r.Pairs, r.Exit, r.Unanswered)
	fmt.Printf("  %-26s %12s %12s %18s\n", "", "with a read", "without", "pair difference")
	fmt.Printf("  %-26s %12.2f %12.2f %18s\n", "broker CPU, % of a core", r.On.BrokerCPU, r.Off.BrokerCPU, r.BrokerCPU)
	for _, g := range threadGroups {
		fmt.Printf("  %-26s %12.2f %12.2f %18s\n", "  its "+g.name+" threads", r.On.GroupCPU[g.name], r.Off.GroupCPU[g.name], r.GroupCPU[g.name])
	}
	fmt.Printf("  %-26s %12.2f %12.2f %18s\n", "publish p50 (ms), median", r.On.PublishP50, r.Off.PublishP50, r.PublishP50)
	fmt.Printf("  %-26s %12.2f %12.2f %18s\n", "publish p99 (ms), median", r.On.PublishP99, r.Off.PublishP99, r.PublishP99)
	fmt.Printf("  %-26s %12.2f %12.2f %18s\n", "publish mean (ms)", r.On.PublishAvg, r.Off.PublishAvg, r.PublishAvg)
	if off := r.Off.BrokerCPU; off > 0 {
		d, e := r.BrokerCPU, r.GroupCPU["exporter"]
		fmt.Printf("  a read per interval costs the broker %.2f%% of a core, %.1f%% of its CPU (95%% CI %.1f%% to %.1f%%);\n",
			d.Mean, d.Mean/off*100, (d.Mean-d.CI95)/off*100, (d.Mean+d.CI95)/off*100)
		fmt.Printf("  the exporter's threads alone %.2f%% of a core, %.2f%% of the broker's CPU\n", e.Mean, e.Mean/off*100)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "") + "\n"
}
