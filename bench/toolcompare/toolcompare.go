// Package toolcompare runs load-generating clients as child processes and
// compares them: each run's rate by the tool's own clock and by wall time,
// and the child's CPU seconds (its rusage only, the broker excluded), then
// min / median / max over repetitions and ratios against peers, paired
// repetition by repetition. The bench/compare-* commands use it.
package toolcompare

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Measurement is one run of one tool.
type Measurement struct {
	Tool    string  `json:"tool"`
	Role    string  `json:"role"` // producer, consumer, or what the comparison names
	Size    int     `json:"size"`
	Records int64   `json:"records"`
	Rep     int     `json:"rep"`
	Rate    float64 `json:"rate"`       // msgs/s by the tool's own clock
	Wall    float64 `json:"wall"`       // seconds, process start to exit
	CPU     float64 `json:"cpu"`        // user+system seconds of the process
	Startup float64 `json:"startupCpu"` // CPU seconds of a 1-record run
}

// Tool is one client under test: the command line for a topic (or queue)
// and a record count, and how to read its rate from its output.
type Tool struct {
	Name string
	Cmd  func(topic string, records int64) []string
	// Rate extracts msgs/s by the tool's own clock from its output.
	Rate func(out string) (float64, error)
}

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
	if err != nil {
		return Measurement{}, fmt.Errorf("%s %s: %w\n%s", t.Name, role, err, Tail(out.String()))
	}
	m := Measurement{Tool: t.Name, Role: role, Size: size, Records: records, Rep: rep, Wall: wall,
		CPU: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	if records > 1 {
		if m.Rate, err = t.Rate(out.String()); err != nil {
			return m, fmt.Errorf("%s %s: %w\n%s", t.Name, role, err, Tail(out.String()))
		}
		fmt.Printf("  %-8s %-28s rep %d: %10.0f msg/s, wall %6.2f s, cpu %6.2f s\n", role, t.Name, rep, m.Rate, m.Wall, m.CPU)
	}
	return m, nil
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

type spread struct{ min, med, max float64 }

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{s[0], med, s[len(s)-1]}
}

func (s spread) String() string { return fmt.Sprintf("%10.0f %10.0f %10.0f", s.min, s.med, s.max) }

func (s spread) ratio() string { return fmt.Sprintf("%.2f (%.2f-%.2f)", s.med, s.min, s.max) }

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
				fmt.Printf(" %s", spreadOf(v))
			}
			fmt.Println()
		}
		ratio := func(a, b string, which int) string {
			var v []float64
			for i := range min(len(by[a]), len(by[b])) {
				v = append(v, metric(by[a][i], which)/metric(by[b][i], which))
			}
			return spreadOf(v).ratio()
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
