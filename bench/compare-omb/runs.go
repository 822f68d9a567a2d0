package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Tool names, as the measurements carry them.
const (
	toolOMB         = "OMB"
	toolBrokerbench = "brokerbench"
)

// runTimeout bounds one run of brokerbench: a one-minute workload takes
// under two minutes, its broker's topic creation included.
const runTimeout = 20 * time.Minute

// ombMargin is what an OMB run may take beyond its workload's warmup
// and measurement before it is called hung: its JVM's start, its
// driver's set-up, its topics' creation and its result's writing. Some
// OMB drivers (Redis') never finish a run: their consumers' blocking
// reads keep OMB from writing its result.
const ombMargin = 3 * time.Minute

// measurement is one run of one tool.
type measurement struct {
	toolcompare.Measurement
	// Stored is the broker's count of the messages the run published:
	// every message the tool's process published in its life, counted the
	// same way for both tools (Records is the count in the tool's own
	// result, of its measurement alone). CountedBy says how the broker
	// counted them.
	Stored    int64  `json:"storedByBroker"`
	CountedBy string `json:"countedBy"`
}

// runs runs both tools against one broker at a time.
type runs struct {
	dir         string // temporary files
	omb         checkout
	classpath   string // OMB's framework and drivers
	brokerbench string // the brokerbench binary
	heap        string // OMB's JVM heap, as -Xmx takes it
}

// compare starts b, runs every workload reps times with each tool on it,
// prints each workload's figures, and stops b.
func (r *runs) compare(ctx context.Context, b broker, o options, workloads []string) ([]measurement, error) {
	st, stop, err := toolcompare.Up(ctx, b.local(o.port), r.dir)
	if err != nil {
		return nil, err
	}
	defer stop()
	text, err := os.ReadFile(filepath.Join(r.omb.dir, b.driverFile))
	if err != nil {
		return nil, fmt.Errorf("OMB's %s driver file: %w", b.name, err)
	}
	pointed, err := b.pointAt(string(text), st)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.driverFile, err)
	}
	driver := filepath.Join(r.dir, b.name+"-"+filepath.Base(b.driverFile))
	if err := os.WriteFile(driver, []byte(pointed), 0o644); err != nil {
		return nil, err
	}
	fmt.Printf("OMB's %s, pointed at %s: %s\nmessages counted: %s\n", b.driverFile, st.Address(), driver, b.counted)
	var all []measurement
	for _, w := range workloads {
		role := b.name + " " + strings.TrimSuffix(filepath.Base(w), filepath.Ext(w))
		fmt.Printf("\n== %s (%d repetitions)\n", role, o.reps)
		var ms []measurement
		for rep := range o.reps {
			order := []string{toolOMB, toolBrokerbench}
			if rep%2 == 1 {
				slices.Reverse(order)
			}
			for _, tool := range order {
				m, err := r.measureCounted(ctx, b, st, tool, role, rep, driver, w)
				if err == nil {
					fmt.Printf("  %-11s rep %d: %10d msgs in its result, %9.0f msg/s, %10d msgs counted by the broker, wall %5.1f s, cpu %6.2f s, max RSS %5.0f MiB\n",
						tool, rep, m.Records, m.Rate, m.Stored, m.Wall, m.CPU, float64(m.MaxRSS)/(1<<20))
					err = b.clean(ctx, st)
				}
				if err != nil {
					return append(all, ms...), err
				}
				ms = append(ms, m)
			}
		}
		report(ms)
		all = append(all, ms...)
	}
	return all, nil
}

// measureCounted measures one run of tool with measure, and the broker's
// count of the messages it published: the count after it less the count
// before, or the tool's own where the broker cannot count.
func (r *runs) measureCounted(ctx context.Context, b broker, st local.Status, tool, role string, rep int, driver, workloadFile string) (measurement, error) {
	var before int64
	if b.count != nil {
		var err error
		if before, err = b.count(ctx, st); err != nil {
			return measurement{}, err
		}
	}
	m, err := r.measure(ctx, tool, role, rep, driver, workloadFile)
	if err != nil {
		return m, err
	}
	m.Stored, m.CountedBy = m.Records, b.counted
	if b.count != nil {
		after, err := b.count(ctx, st)
		m.Stored = after - before
		return m, err
	}
	return m, nil
}

// measure runs one tool once on workloadFile with driver, from the OMB
// checkout's root, and reads the messages it published from its result.
func (r *runs) measure(ctx context.Context, tool, role string, rep int, driver, workloadFile string) (measurement, error) {
	out := filepath.Join(r.dir, fmt.Sprintf("result-%s-%d.json", strings.ToLower(tool), time.Now().UnixNano()))
	log := filepath.Join(r.dir, "run.log")
	m := measurement{Measurement: toolcompare.Measurement{Tool: tool, Role: role, Rep: rep}}
	var ps *os.ProcessState
	var err error
	switch tool {
	case toolOMB:
		var res ombResult
		finished := func() bool {
			data, err := os.ReadFile(out)
			if err != nil {
				return false
			}
			res, err = parseOMBResult(data)
			return err == nil
		}
		data, rerr := os.ReadFile(workloadFile)
		if rerr != nil {
			return m, rerr
		}
		length, lerr := ombWorkloadTime(data)
		if lerr != nil {
			return m, fmt.Errorf("%s: %w", workloadFile, lerr)
		}
		bound := length + ombMargin
		ps, m.Wall, err = runChild(ctx, r.omb.dir, ombCommand(r.classpath, r.heap, driver, out, workloadFile), log, bound, finished)
		m.Records, m.Rate, m.Size = res.Published, res.Rate, res.MessageSize
	default:
		// Its topics stay, as OMB's do, for the broker's count; clean
		// deletes them.
		argv := []string{r.brokerbench, "run", workloadFile, "--driver", driver, "-o", out, "--no-history", "--quiet", "--keep-topics"}
		ps, m.Wall, err = runChild(ctx, r.omb.dir, argv, log, runTimeout, nil)
		var exit *exec.ExitError
		if errors.As(err, &exit) && slices.Contains(toolcompare.BrokerbenchVerdicts, exit.ExitCode()) {
			err = nil // measured, and judged: the figures hold
		}
		if err == nil {
			var res *results.Run
			if res, err = results.Read(out); err == nil {
				m.Records, m.Rate, m.Size = res.Measured.Acked, res.Measured.PublishRate, res.Workload.MessageSize
			}
		}
	}
	if err != nil {
		tail, _ := os.ReadFile(log)
		return m, fmt.Errorf("%s on %s: %w\n%s", tool, role, err, toolcompare.Tail(string(tail)))
	}
	m.CPU, m.MaxRSS = toolcompare.Usage(ps)
	return m, nil
}

// runChild runs argv in dir, its output to log, as a process group of its
// own. With finished nil it waits for the process to exit; otherwise it
// polls finished and, once it holds, stops the group (SIGTERM, SIGKILL
// after 10 s): a process that exits before is an error. A process that
// neither exits nor finishes within bound is killed with its group, and
// that is an error that says so. Either way it returns only once the
// group is gone, with the process's state and the seconds from its start
// to its exit or to finished holding.
func runChild(ctx context.Context, dir string, argv []string, log string, bound time.Duration, finished func() bool) (*os.ProcessState, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	logFile, err := os.Create(log)
	if err != nil {
		return nil, 0, err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if finished == nil {
		err := <-exited
		return cmd.ProcessState, time.Since(start).Seconds(), errors.Join(err, groupGone(pgid))
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !finished() {
		select {
		case err := <-exited:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, 0, errors.Join(fmt.Errorf("wrote no result within %v (hung): its process group was killed", bound), groupGone(pgid))
			}
			return nil, 0, errors.Join(fmt.Errorf("exited before it wrote its result (%v)", err), groupGone(pgid))
		case <-tick.C:
		}
	}
	wall := time.Since(start).Seconds()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	return cmd.ProcessState, wall, groupGone(pgid)
}

// stopGroup kills what is left of process group pgid.
func stopGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// groupGone checks that no process of group pgid is left, killing any
// that is and waiting up to 5 s for it to go.
func groupGone(pgid int) error {
	for range 50 {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		stopGroup(pgid)
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("process group %d is still there 5 s after it was killed", pgid)
}
