package output

import (
	"fmt"
	"io"

	"github.com/brokerbench/brokerbench/internal/livemetrics"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Progress prints a line per interval.
type Progress struct {
	Base
	W io.Writer
}

var _ Output = Progress{}

// AddInterval prints the interval's progress line.
func (p Progress) AddInterval(iv results.Interval, _ results.Histograms) {
	fmt.Fprintln(p.W, results.ProgressLine(iv))
}

// Live serves the run's intervals on a live metrics endpoint, labelled
// Name, while it lasts.
type Live struct {
	Server *livemetrics.Server
	Name   string
}

var _ Output = Live{}

// Start marks the run in progress.
func (l Live) Start(head *results.Run) error {
	l.Server.Begin(l.Name, head.Driver.Name)
	return nil
}

// AddInterval serves the interval.
func (l Live) AddInterval(iv results.Interval, _ results.Histograms) { l.Server.Observe(iv) }

// Stop marks the run finished.
func (l Live) Stop(*results.Run, bool) error {
	l.Server.End()
	return nil
}

// Ending prints on W what Print says of the run once it ended, if it
// measured anything.
type Ending struct {
	Base
	W     io.Writer
	Print func(io.Writer, *results.Run)
}

var _ Output = Ending{}

// Summary prints the run's summary once it ended.
func Summary(w io.Writer) Ending { return Ending{W: w, Print: results.PrintSummary} }

// Rates prints one line of the run's rates and latencies once it ended:
// a study's line per run.
func Rates(w io.Writer) Ending { return Ending{W: w, Print: printRates} }

// Stop prints what Print says of res, if any.
func (e Ending) Stop(res *results.Run, _ bool) error {
	if res != nil {
		e.Print(e.W, res)
	}
	return nil
}

func printRates(w io.Writer, res *results.Run) {
	fmt.Fprintf(w, "    %.0f msg/s published, %.0f consumed; publish p99 %.2f ms, e2e p99 %.2f ms\n",
		res.Measured.PublishRate, res.Measured.ConsumeRate, res.Measured.PublishLatency.P99, res.Measured.EndToEndLatency.P99)
}
