package cli

import (
	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/engine"
)

func newWorkerCmd(io IO) *cobra.Command {
	var o engine.ServeOptions
	cmd := &cobra.Command{
		Use:   "worker --listen ADDR",
		Short: "Serve as a load-generating worker of distributed runs",
		Long: `worker serves the worker API (` + distributed.APIVersion + `, HTTP+JSON under
` + distributed.APIPrefix + `) on ADDR. A coordinator ('brokerbench run --workers ...') gives it
its share of a workload: producers and consumers by global id, the run's
topics, and how to make its driver (the driver file's text: references to
secrets such as ${env:NAME} are expanded here, in the worker's
environment). The worker prepares, waits for the coordinator's start
instant, and streams every interval's counts and encoded histograms.

It stops its run when the coordinator stops it, closes the event stream or
stops renewing its lease (10 s): no load outlives its coordinator. On
SIGTERM or SIGINT it stops any run and exits. With --once it exits after
its first run (for Kubernetes Jobs).`,
		Example: `  brokerbench worker --listen 127.0.0.2:7070
  brokerbench run workloads/quick.yaml --workers http://127.0.0.2:7070,http://127.0.0.3:7070`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return engine.Serve(cmd.Context(), io, o)
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", o.Listen, "address to serve the worker API on, host:port (required)")
	cmd.Flags().BoolVar(&o.Once, "once", o.Once, "exit after the first run")
	cmd.Flags().BoolVar(&o.ExitWithStdin, "exit-with-stdin", o.ExitWithStdin, "stop and exit when standard input closes (for workers another brokerbench started)")
	_ = cmd.Flags().MarkHidden("exit-with-stdin")
	_ = cmd.MarkFlagRequired("listen")
	return cmd
}
