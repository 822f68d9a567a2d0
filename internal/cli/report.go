package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/report"
	"github.com/brokerbench/brokerbench/internal/results"
)

type reportFlags struct {
	out         string
	perNodeHour float64
	nodes       int
}

func newReportCmd(io IO) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report RESULTS... [-o report.html]",
		Short: "Write a self-contained HTML report of results files and study directories",
		Long: `report reads results files (from run) and study directories (from study) and
writes one HTML file that opens offline: a summary table in the study's
shape, message accounting, backlog tests, skipped runs, and charts (publish
and consume rate, backlog and latency over time, latency percentile
distributions, throughput against each swept parameter with iterations as
min/median/max). Beside it, NAME-files/ holds every table as Markdown and
CSV and every chart as SVG, for embedding in documents.

--price-per-node-hour and --nodes set the cost of the system under test
for every run, replacing a study's price; the summary then shows the cost
per billion messages.`,
		Example: `  brokerbench report results/ibm-event-streams-quick -o ibm.html
  brokerbench report results/run-a.json results/run-b.json -o ab.html --price-per-node-hour 0.38 --nodes 3`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("report needs at least one results file or study directory")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := report.Load(args)
			if err != nil {
				return usageError{err}
			}
			if f.perNodeHour > 0 {
				for _, g := range in.Groups {
					for _, r := range g.Runs {
						r.Price = &results.Price{PerNodeHour: f.perNodeHour, Nodes: f.nodes, Currency: "USD"}
					}
				}
			}
			out := f.out
			if out == "" {
				out = "report.html"
			}
			w, err := engine.WriteReport(in, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "report: %s (tables and charts in %s)\n", w.HTML, filepath.Dir(w.Files[0]))
			return nil
		},
	}
	cmd.Flags().StringVarP(&f.out, "out", "o", "report.html", "HTML file to write")
	cmd.Flags().Float64Var(&f.perNodeHour, "price-per-node-hour", 0, "cost of one broker node per hour, for cost per billion messages")
	cmd.Flags().IntVar(&f.nodes, "nodes", 1, "number of broker nodes the price applies to")
	return cmd
}
