package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// Interrupts turns SIGINT and SIGTERM into two steps: the first cancels
// Stop, the second cancels Abandon. What each step does is the caller's:
// a run stops producing at the first, drains briefly and writes its
// results, and gives up waiting on the broker at the second.
type Interrupts struct {
	Stop, Abandon context.Context
	release       func()
}

// Release stops watching the signals and cancels both contexts; call it
// once the work is over.
func (i *Interrupts) Release() { i.release() }

// stages are what an interrupt says at each step; unhook: after the
// second, signals are no longer caught, so that a third ends the process.
type stages struct {
	first, second string
	unhook        bool
}

// runStages are the steps of a run in this process.
var runStages = stages{
	first:  "\n%s: stopping the producers and draining briefly; interrupt again to abandon the drain and cleanup and write the partial results at once\n",
	second: "\n%s again: abandoning the drain and cleanup, writing the partial results\n",
}

// kubeStages are the steps of a run on Kubernetes: the first stops the
// coordinator's pod with a grace period in which it writes its partial
// results, the second ends the wait for them (the run's objects are still
// deleted), and a third is no longer caught.
var kubeStages = stages{
	first:  "\n%s: stopping the run on Kubernetes; interrupt again to stop waiting for the coordinator's partial results (the run's objects are deleted either way)\n",
	second: "\n%s again: no longer waiting for the partial results; deleting the run's objects (interrupt once more to exit at once, leaving them)\n",
	unhook: true,
}

// WatchInterrupts watches SIGINT and SIGTERM for a run in this process,
// saying on w what each step does.
func WatchInterrupts(parent context.Context, w io.Writer) *Interrupts {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return watch(parent, w, sigs, func() { signal.Stop(sigs) }, runStages)
}

// watchKubeInterrupts watches SIGINT and SIGTERM for a run on Kubernetes.
func watchKubeInterrupts(parent context.Context, w io.Writer) *Interrupts {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return watch(parent, w, sigs, func() { signal.Stop(sigs) }, kubeStages)
}

// watch turns the signals sigs delivers into the steps st says; unhook
// stops their delivery (it may be called twice).
func watch(parent context.Context, w io.Writer, sigs <-chan os.Signal, unhook func(), st stages) *Interrupts {
	stop, cancelStop := context.WithCancelCause(parent)
	abandon, cancelAbandon := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(w, st.first, s)
			cancelStop(fmt.Errorf("%s", s))
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			if st.unhook {
				unhook()
			}
			fmt.Fprintf(w, st.second, s)
			cancelAbandon(fmt.Errorf("%s twice", s))
		case <-done:
		}
	}()
	return &Interrupts{Stop: stop, Abandon: abandon, release: func() {
		unhook()
		close(done)
		cancelStop(nil)
		cancelAbandon(nil)
	}}
}

// closeBounded closes drv, waiting at most 2 s once abandon is done: a
// stuck broker must not keep the process from exiting.
func closeBounded(drv driver.Driver, abandon context.Context) {
	done := make(chan struct{})
	go func() { drv.Close(); close(done) }()
	select {
	case <-done:
	case <-abandon.Done():
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}
}
