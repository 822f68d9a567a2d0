package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
)

// versionLine describes this build.
func versionLine() string {
	kafka := "none"
	if c, err := brokers.NewLocal("kafka", 0, 1); err == nil {
		kafka = c.Kind.Version()
	}
	return fmt.Sprintf("brokerbench %s (commit %s, %s %s/%s; local Kafka %s)",
		sysinfo.Version, sysinfo.Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, kafka)
}

func newVersionCmd(io IO) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the brokerbench version and build",
		Example: "  brokerbench version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(io.Out, versionLine())
			return nil
		},
	}
}
