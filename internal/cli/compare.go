package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/report"
)

func newCompareCmd(io IO) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "compare A B [-o compare.html]",
		Short: "Compare two result sets: a terminal table of deltas, and optionally a side-by-side report",
		Long: `compare reads two inputs (each a results file or a study directory), matches
their configurations by name (workload / setup / parameter values), and
prints each shared configuration's throughput and latency in A and in B
with B's change relative to A. With -o it also writes one HTML report
with both sets side by side: A's and B's runs in the same tables and
charts.`,
		Example: `  brokerbench compare results/before results/after
  brokerbench compare results/kafka-4.2.json results/kafka-4.3.json -o compare.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("compare takes exactly two inputs, got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := report.Load(args[:1])
			if err != nil {
				return usageError{err}
			}
			b, err := report.Load(args[1:])
			if err != nil {
				return usageError{err}
			}
			t, err := report.Compare(a, b)
			if err != nil {
				return usageError{err}
			}
			nameA, nameB := report.CompareLabels(args[0], args[1])
			fmt.Fprintf(io.Out, "A = %s, B = %s\n", args[0], args[1])
			tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
			for i, h := range t.Headers {
				if i > 0 {
					fmt.Fprint(tw, "\t")
				}
				fmt.Fprint(tw, h)
			}
			fmt.Fprintln(tw)
			for _, row := range t.Rows {
				for i, c := range row {
					if i > 0 {
						fmt.Fprint(tw, "\t")
					}
					fmt.Fprint(tw, c)
				}
				fmt.Fprintln(tw)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if out != "" {
				w, err := engine.WriteReport(report.Merge(a, b, nameA, nameB), out)
				if err != nil {
					return err
				}
				fmt.Fprintf(io.Out, "report: %s\n", w.HTML)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "also write a side-by-side HTML report here")
	return cmd
}
