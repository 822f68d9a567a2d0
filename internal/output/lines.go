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

// Summary prints the run's summary once it ended.
type Summary struct {
	Base
	W io.Writer
}

var _ Output = Summary{}

// Stop prints the summary of res, if any.
func (s Summary) Stop(res *results.Run, _ bool) error {
	if res != nil {
		results.PrintSummary(s.W, res)
	}
	return nil
}

// Rates prints one line of the run's rates and latencies once it ended:
// a study's line per run.
type Rates struct {
	Base
	W io.Writer
}

var _ Output = Rates{}

// Stop prints the line of res, if any.
func (r Rates) Stop(res *results.Run, _ bool) error {
	if res != nil {
		fmt.Fprintf(r.W, "    %.0f msg/s published, %.0f consumed; publish p99 %.2f ms, e2e p99 %.2f ms\n",
			res.Measured.PublishRate, res.Measured.ConsumeRate, res.Measured.PublishLatency.P99, res.Measured.EndToEndLatency.P99)
	}
	return nil
}
