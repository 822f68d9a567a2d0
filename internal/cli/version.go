package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
)

func newVersionCmd(io IO) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the brokerbench version and build",
		Example: "  brokerbench version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(io.Out, "brokerbench %s (commit %s, %s %s/%s; local Kafka %s)\n",
				sysinfo.Version, sysinfo.Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, local.KafkaVersion)
			return nil
		},
	}
}
