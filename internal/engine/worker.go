package engine

import (
	"context"
	"errors"
	"fmt"
	stdio "io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/sysmetrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// ServeOptions are what a worker serves on and how long.
type ServeOptions struct {
	// Listen is the address to serve the worker API on, host:port.
	Listen string
	// Once exits after the first run.
	Once bool
	// ExitWithStdin stops and exits when standard input closes.
	ExitWithStdin bool
}

// Serve serves as a load-generating worker of distributed runs until
// interrupted, orphaned (ExitWithStdin) or, with Once, its first run ends.
func Serve(parent context.Context, io IO, o ServeOptions) error {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return badInputf("--listen %s: %w", o.Listen, err)
	}
	w := &distributed.Worker{
		Connect: connectWorkerDriver, Version: sysinfo.Version, Log: io.Err,
		Sampler: func() func() *results.System { return sysmetrics.New(nil).Sample },
	}
	srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(io.Err, "worker: serving %s on http://%s%s\n", distributed.APIVersion, ln.Addr(), distributed.APIPrefix)
	sig := WatchInterrupts(parent, io.Err)
	defer sig.Release()
	var finished <-chan struct{}
	if o.Once {
		finished = w.Finished()
	}
	orphaned := make(chan struct{})
	if o.ExitWithStdin {
		go func() {
			_, _ = stdio.Copy(stdio.Discard, os.Stdin)
			close(orphaned)
		}()
	}
	stop := func(cause error) {
		fmt.Fprintln(io.Err, "worker: stopping")
		ctx, cancel := context.WithTimeout(sig.Abandon, 30*time.Second)
		w.Stop(ctx, cause)
		cancel()
	}
	select {
	case err := <-served:
		return failed(err)
	case <-sig.Stop.Done():
		stop(context.Cause(sig.Stop))
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
		return DefaultDriver(), nil
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
