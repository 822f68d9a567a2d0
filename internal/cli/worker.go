package cli

import (
	"context"
	"errors"
	"fmt"
	stdio "io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/sysmetrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func newWorkerCmd(io IO) *cobra.Command {
	var listen string
	var once, exitWithStdin bool
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
			return serveWorker(cmd.Context(), io, listen, once, exitWithStdin)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to serve the worker API on, host:port (required)")
	cmd.Flags().BoolVar(&once, "once", false, "exit after the first run")
	cmd.Flags().BoolVar(&exitWithStdin, "exit-with-stdin", false, "stop and exit when standard input closes (for workers another brokerbench started)")
	_ = cmd.Flags().MarkHidden("exit-with-stdin")
	_ = cmd.MarkFlagRequired("listen")
	return cmd
}

func serveWorker(parent context.Context, io IO, listen string, once, exitWithStdin bool) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usageError{fmt.Errorf("--listen %s: %w", listen, err)}
	}
	w := &distributed.Worker{
		Connect: connectWorkerDriver, Version: sysinfo.Version, Log: io.Err,
		Sampler: func() func() *results.System { return sysmetrics.New(nil).Sample },
	}
	srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(io.Err, "worker: serving %s on http://%s%s\n", distributed.APIVersion, ln.Addr(), distributed.APIPrefix)
	sig := watchInterrupts(parent, io.Err)
	defer sig.release()
	var finished <-chan struct{}
	if once {
		finished = w.Finished()
	}
	orphaned := make(chan struct{})
	if exitWithStdin {
		go func() {
			_, _ = stdio.Copy(stdio.Discard, os.Stdin)
			close(orphaned)
		}()
	}
	stop := func(cause error) {
		fmt.Fprintln(io.Err, "worker: stopping")
		ctx, cancel := context.WithTimeout(sig.abandon, 30*time.Second)
		w.Stop(ctx, cause)
		cancel()
	}
	select {
	case err := <-served:
		return withCode(ExitRunFailed, err)
	case <-sig.stop.Done():
		stop(context.Cause(sig.stop))
	case <-orphaned:
		stop(errors.New("the process that started the worker is gone"))
	case <-finished:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

// connectWorkerDriver makes the driver a coordinator's assignment names,
// from the text of the file its settings came from.
func connectWorkerDriver(_ context.Context, src distributed.DriverSource) (driver.Driver, error) {
	dc, err := workerDriverConfig(src)
	if err != nil {
		return nil, err
	}
	return brokers.New(dc, driver.Options{Endpoints: src.Endpoints})
}

func workerDriverConfig(src distributed.DriverSource) (*workload.DriverConfig, error) {
	switch {
	case src.Config != nil:
		return src.Config, nil
	case src.Text == "":
		return defaultDriver(), nil
	case src.Inline:
		w, err := workload.Parse(src.Name, []byte(src.Text))
		if err != nil {
			return nil, err
		}
		if w.Driver == nil {
			return nil, errors.New(src.Name + ": the workload has no inline driver section")
		}
		return w.Driver, nil
	}
	return workload.ParseDriver(src.Name, []byte(src.Text))
}

// defaultDriver is the driver of a workload that names none.
func defaultDriver() *workload.DriverConfig {
	return &workload.DriverConfig{Name: "kafka", Format: workload.Native, ReplicationFactor: 1, Source: "default Kafka driver"}
}
