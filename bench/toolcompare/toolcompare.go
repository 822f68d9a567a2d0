// Package toolcompare runs load-generating clients as child processes and
// compares them: each run's rate by the tool's own clock and by wall time,
// and the child's CPU seconds (its rusage only, the broker excluded), then
// min / median / max over repetitions and ratios against peers, paired
// repetition by repetition. The bench/compare-* commands use it.
package toolcompare

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Measurement is one run of one tool.
type Measurement struct {
	Tool    string  `json:"tool"`
	Role    string  `json:"role"` // producer, consumer, or what the comparison names
	Size    int     `json:"size"`
	Records int64   `json:"records"`
	Rep     int     `json:"rep"`
	Rate    float64 `json:"rate"`                  // msgs/s by the tool's own clock
	Wall    float64 `json:"wall"`                  // seconds, process start to exit
	CPU     float64 `json:"cpu"`                   // user+system seconds of the process
	Startup float64 `json:"startupCpu"`            // CPU seconds of a 1-record run
	MaxRSS  int64   `json:"maxRssBytes,omitempty"` // the process's peak resident set
}

// Tool is one client under test: the command line for a topic (or queue)
// and a record count, and how to read its rate from its output.
type Tool struct {
	Name string
	Cmd  func(topic string, records int64) []string
	// Rate extracts msgs/s by the tool's own clock from its output.
	Rate func(out string) (float64, error)
	// Count, for a tool that runs for a time rather than a record count,
	// extracts the records it handled from its output; the run's
	// measurement counts those (nil: the record count it was given).
	Count func(out string) (int64, error)
	// Measured are the exit statuses besides 0 after which the run was
	// still measured: brokerbench's verdicts (BrokerbenchVerdicts).
	Measured []int
}

// BrokerbenchVerdicts are the exit statuses of a brokerbench run that was
// measured but judged: a missed target (3), a load-generator-bound run
// (6), a machine disturbed by other processes (7). A comparison on a
// shared machine gets 7, and its CPU figures still hold: they are the
// child's own.
var BrokerbenchVerdicts = []int{3, 6, 7}

// Run runs t once as a child process and measures it. A run of one record
// measures start-up only: its rate is not read.
func Run(ctx context.Context, t Tool, role string, size int, records int64, rep int, topic string) (Measurement, error) {
	argv := t.Cmd(topic, records)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && slices.Contains(t.Measured, exit.ExitCode())) {
		return Measurement{}, fmt.Errorf("%s %s: %w\n%s", t.Name, role, err, Tail(out.String()))
	}
	m := Measurement{Tool: t.Name, Role: role, Size: size, Records: records, Rep: rep, Wall: wall}
	m.CPU, m.MaxRSS = Usage(cmd.ProcessState)
	if records > 1 {
		if m.Rate, err = t.Rate(out.String()); err != nil {
			return m, fmt.Errorf("%s %s: %w\n%s", t.Name, role, err, Tail(out.String()))
		}
		if t.Count != nil {
			if m.Records, err = t.Count(out.String()); err != nil {
				return m, fmt.Errorf("%s %s: %w\n%s", t.Name, role, err, Tail(out.String()))
			}
		}
		fmt.Printf("  %-8s %-28s rep %d: %10.0f msg/s, wall %6.2f s, cpu %6.2f s\n", role, t.Name, rep, m.Rate, m.Wall, m.CPU)
	}
	return m, nil
}

// Usage is what a process that has been waited for cost: its user+system
// CPU seconds and its peak resident set in bytes (its own, not its
// children's: those are counted only if it waited for them).
func Usage(ps *os.ProcessState) (cpu float64, maxRSS int64) {
	cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		maxRSS = int64(ru.Maxrss) * 1024 // Linux reports KiB
	}
	return cpu, maxRSS
}

// Tail returns the last lines of a tool's output, for errors.
func Tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// KeyRate reads "rate=R" from a bare client's output.
func KeyRate(out string) (float64, error) {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "rate="); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, errors.New("no rate= in the output")
}

// Spread is the minimum, median and maximum of a figure over repetitions.
type Spread struct{ Min, Med, Max float64 }

// SpreadOf returns the spread of v; zero for none.
func SpreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{s[0], med, s[len(s)-1]}
}

// String prints the spread as three whole numbers in columns.
func (s Spread) String() string { return fmt.Sprintf("%10.0f %10.0f %10.0f", s.Min, s.Med, s.Max) }

// Ratio prints the spread of a ratio: "median (min-max)".
func (s Spread) Ratio() string { return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Med, s.Min, s.Max) }

// Side is one role of a comparison: its tools, and the peers brokerbench
// is compared with (by tool name).
type Side struct {
	Role  string
	Tools []Tool
	Peers []string
	// Extra prints more ratios of the side; ratio(a, b, which) pairs tool
	// a's repetitions with tool b's (which: 0 rate, 1 wall rate, 2
	// msgs/CPU-s, 3 msgs/CPU-s without start-up).
	Extra func(ratio func(a, b string, which int) string)
}

// Report prints each side's figures and brokerbench's ratios to its peers.
func Report(ms []Measurement, sides ...Side) {
	for _, side := range sides {
		by := map[string][]Measurement{}
		for _, m := range ms {
			if m.Role == side.Role {
				by[m.Tool] = append(by[m.Tool], m)
			}
		}
		fmt.Printf("\n%s: min / median / max over repetitions\n", side.Role)
		fmt.Printf("  %-28s %32s %32s %32s %32s\n", "tool", "msgs/s (tool's clock)", "msgs/s (wall, with start-up)", "msgs/CPU-s (with start-up)", "msgs/CPU-s (start-up excluded)")
		metric := func(m Measurement, which int) float64 {
			switch which {
			case 0:
				return m.Rate
			case 1:
				return float64(m.Records) / m.Wall
			case 2:
				return float64(m.Records) / m.CPU
			default:
				return float64(m.Records) / max(m.CPU-m.Startup, 1e-3)
			}
		}
		for _, t := range side.Tools {
			fmt.Printf("  %-28s", t.Name)
			for which := range 4 {
				var v []float64
				for _, m := range by[t.Name] {
					v = append(v, metric(m, which))
				}
				fmt.Printf(" %s", SpreadOf(v))
			}
			fmt.Println()
		}
		ratio := func(a, b string, which int) string {
			var v []float64
			for i := range min(len(by[a]), len(by[b])) {
				v = append(v, metric(by[a][i], which)/metric(by[b][i], which))
			}
			return SpreadOf(v).Ratio()
		}
		fmt.Println("  ratios, median (min-max):")
		for _, peer := range side.Peers {
			fmt.Printf("    brokerbench / %-26s msgs/s %s, msgs/CPU-s %s, msgs/CPU-s start-up excluded %s\n",
				peer, ratio("brokerbench", peer, 0), ratio("brokerbench", peer, 2), ratio("brokerbench", peer, 3))
		}
		if side.Extra != nil {
			side.Extra(ratio)
		}
	}
}

// Build builds commands (name, package path) into dir with CGO off; the
// go tool runs in the current directory, the repository's root.
func Build(ctx context.Context, dir string, commands ...[2]string) error {
	for _, b := range commands {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b[0]), b[1])
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s (run from the repository root): %w\n%s", b[1], err, out)
		}
	}
	return nil
}

// Sizes parses a comma-separated list of message sizes, each at least 22
// bytes (brokerbench's header).
func Sizes(list string) ([]int, error) {
	var sizes []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 22 {
			return nil, fmt.Errorf("-sizes: %q is not a size of at least 22 bytes", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// RunFunc runs one tool once (Run, or Run with preparations around it).
type RunFunc func(ctx context.Context, t Tool, role string, size int, records int64, rep int, topic string) (Measurement, error)

// Rounds measures each tool's start-up with a 1-record run, then runs
// every tool reps times with records, rotating their order each
// repetition so that none always runs first; topic names each run's
// topic or queue.
func Rounds(ctx context.Context, run RunFunc, tools []Tool, role string, size int, records int64, reps int, topic func(rep, i int) string) ([]Measurement, error) {
	startup := map[string]float64{}
	for _, t := range tools {
		m, err := run(ctx, t, role, size, 1, 0, fmt.Sprintf("startup-%d", time.Now().UnixNano()))
		if err != nil {
			return nil, err
		}
		startup[t.Name] = m.CPU
	}
	var ms []Measurement
	for rep := range reps {
		for i := range tools {
			t := tools[(i+rep)%len(tools)]
			m, err := run(ctx, t, role, size, records, rep, topic(rep, i))
			if err != nil {
				return ms, err
			}
			m.Startup = startup[t.Name]
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// Options are the flags every comparison takes.
type Options struct {
	Records int64  // records per run (at 100 B, for comparisons that scale it by size)
	Sizes   []int  // message sizes
	Reps    int    // repetitions of each tool
	Port    int    // the broker's port on 127.0.0.1
	Out     string // where every measurement goes, as JSON
	// Baseline is a git revision whose brokerbench runs beside this
	// tree's, as one more tool ("brokerbench at REV"): a before/after
	// check of the load generator's cost in one sitting ("" for none).
	Baseline string
}

// Sitting measures tools for one of o's message sizes: a heading, then
// Rounds (with run, and topic naming each run's topic or queue), then,
// if every run was measured, a Report of one side whose peers are every
// tool but brokerbench. It returns Rounds' measurements and error.
func Sitting(ctx context.Context, o Options, run RunFunc, tools []Tool, role string, size int, topic func(rep, i int) string) ([]Measurement, error) {
	fmt.Printf("\n== %d-byte messages, %d records, %d repetitions\n", size, o.Records, o.Reps)
	ms, err := Rounds(ctx, run, tools, role, size, o.Records, o.Reps, topic)
	if err == nil {
		Report(ms, Side{Role: role, Tools: tools, Peers: Peers(tools)})
	}
	return ms, err
}

// BaselineTool is the name of the tool that runs brokerbench built at
// revision rev.
func BaselineTool(rev string) string { return "brokerbench at " + rev }

// BuildAt builds the brokerbench command at git revision rev into
// dir/name: the revision's tree is exported with 'git archive' into a
// directory of its own under dir, so the work tree is left as it is.
func BuildAt(ctx context.Context, dir, rev, name string) error {
	src := filepath.Join(dir, "baseline-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("-baseline %s: export the revision with git archive (run from the repository): %w\n%s", rev, err, out)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, name), "./cmd/brokerbench")
	cmd.Dir, cmd.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("-baseline %s: build brokerbench at that revision: %w\n%s", rev, err, out)
	}
	return os.RemoveAll(src)
}

// Workdir makes a temporary directory for the comparison name and builds
// in it brokerbench, the bare loop ./bench/BARE as bare, and with a
// baseline revision brokerbench at that revision (BuildBaseline). The
// caller removes the directory; Workdir removes it itself if a build
// fails.
func Workdir(ctx context.Context, name, bare, baseline string) (string, error) {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return "", err
	}
	fmt.Printf("building brokerbench and %s\n", bare)
	err = Build(ctx, dir, [2]string{"brokerbench", "./cmd/brokerbench"}, [2]string{bare, "./bench/" + bare})
	if err == nil {
		err = BuildBaseline(ctx, dir, baseline)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// BuildBaseline builds brokerbench at revision rev into
// dir/brokerbench-baseline, as BrokerbenchTools runs it; it does nothing
// when rev is "" (no -baseline).
func BuildBaseline(ctx context.Context, dir, rev string) error {
	if rev == "" {
		return nil
	}
	fmt.Printf("building brokerbench at %s\n", rev)
	return BuildAt(ctx, dir, rev, "brokerbench-baseline")
}

// CPUProfile starts writing a CPU profile of this process to path, for a
// bare loop's -cpuprofile, to set beside 'brokerbench run --pprof'; stop
// ends it. With path "" it does nothing.
func CPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// Main parses the command line into options with the given defaults and
// calls run with a context that ends on Ctrl-C or SIGTERM; an error from
// either ends the process with status 1, named after the command.
func Main(name string, def Options, run func(context.Context, Options) error) {
	o := def
	sizes := make([]string, len(def.Sizes))
	for i, s := range def.Sizes {
		sizes[i] = strconv.Itoa(s)
	}
	list := flag.String("sizes", strings.Join(sizes, ","), "message sizes in bytes, comma-separated")
	flag.Int64Var(&o.Records, "records", def.Records, "records per run")
	flag.IntVar(&o.Reps, "reps", def.Reps, "repetitions of each tool")
	flag.IntVar(&o.Port, "port", def.Port, "port of the broker this command starts on 127.0.0.1")
	flag.StringVar(&o.Out, "out", def.Out, "where to write every measurement as JSON")
	flag.StringVar(&o.Baseline, "baseline", "", "git revision whose brokerbench also runs, as a before/after check in the same sitting")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	var err error
	if o.Sizes, err = Sizes(*list); err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		stop()
		fail(err)
	}
}

// Up starts a comparison's broker, c, with its state under dir, within 5
// minutes; stop ends it by PID. A broker that fails to start is stopped
// before Up returns.
func Up(ctx context.Context, c *local.Cluster, dir string) (st local.Status, stop func(), err error) {
	c.StateDir = filepath.Join(dir, c.Kind.Name())
	c.Log = os.Stdout
	upCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if st, err = c.Up(upCtx); err != nil {
		_ = c.Down()
		return st, nil, err
	}
	return st, func() { _ = c.Down() }, nil
}

// EachSize measures each of o's message sizes with compare, in order,
// and writes every measurement to o.Out: those of the sizes measured
// before a failure too, so that no finished measurement is lost. It
// returns compare's first error, else the write's.
func EachSize(o Options, compare func(size int) ([]Measurement, error)) error {
	var all []Measurement
	var err error
	for _, size := range o.Sizes {
		var ms []Measurement
		ms, err = compare(size)
		all = append(all, ms...)
		if err != nil {
			break
		}
	}
	if len(all) > 0 {
		if werr := results.Write(o.Out, all); werr != nil {
			return errors.Join(err, werr)
		}
		fmt.Printf("\nall measurements: %s\n", o.Out)
	}
	return err
}

// Brokerbench returns the brokerbench tool Build made in dir
// ("brokerbench") and, with a baseline revision, the one BuildAt made
// there ("brokerbench-baseline"), each running workload wl against
// broker. With topic set, a run uses the existing topic it returns for
// the name the comparison gives the run, and keeps it (--topic,
// --keep-topics); with nil, brokerbench makes and deletes its own. rate
// reads a run's results.
func Brokerbench(dir, baseline, wl, broker string, topic func(name string) string, rate func(*results.Run) float64) []Tool {
	tool := func(name, bin string) Tool {
		out := filepath.Join(dir, bin+".json")
		return Tool{Name: name, Cmd: func(run string, n int64) []string {
			argv := []string{filepath.Join(dir, bin), "run", wl, "--broker", broker, "--messages", strconv.FormatInt(n, 10), "--quiet", "-o", out}
			if topic != nil {
				argv = append(argv, "--topic", topic(run), "--keep-topics")
			}
			return argv
		}, Rate: func(string) (float64, error) {
			r, err := results.Read(out)
			if err != nil {
				return 0, err
			}
			return rate(r), nil
		}, Measured: BrokerbenchVerdicts}
	}
	tools := []Tool{tool("brokerbench", "brokerbench")}
	if baseline != "" {
		tools = append(tools, tool(BaselineTool(baseline), "brokerbench-baseline"))
	}
	return tools
}

// Peers are the names of the tools other than brokerbench.
func Peers(tools []Tool) []string {
	var p []string
	for _, t := range tools {
		if t.Name != "brokerbench" {
			p = append(p, t.Name)
		}
	}
	return p
}

// PublishRate is a brokerbench run's measured publish rate.
func PublishRate(r *results.Run) float64 { return r.Measured.PublishRate }

// ConsumeRate is a brokerbench run's measured consume rate.
func ConsumeRate(r *results.Run) float64 { return r.Measured.ConsumeRate }

// LastDeliveryRate is a brokerbench run's records over the time from the
// start of producing to the end of the last interval with a delivery
// (drain included), to a second's resolution: a consumer that falls
// behind its producer lowers it.
func LastDeliveryRate(r *results.Run) float64 {
	var end float64
	var consumed int64
	for _, iv := range r.Intervals {
		if iv.Consumed > 0 {
			end = iv.EndSeconds
		}
		consumed += iv.Consumed
	}
	if end == 0 {
		return 0
	}
	return float64(consumed) / end
}

// InFlight is the number of messages of size bytes brokerbench's runner
// keeps awaiting their acknowledgement per producer (32 MiB / size, at
// least 16 and at most 16,384), which a bare loop is given too.
func InFlight(size int) int { return max(16, min(16384, (32<<20)/size)) }
