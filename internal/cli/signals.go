package cli

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

// interrupts turns SIGINT and SIGTERM into two steps: the first cancels
// stop (a run stops producing, drains briefly, tears down and writes its
// results), the second cancels abandon (a run gives up waiting on the
// broker and writes what it has at once).
type interrupts struct {
	stop, abandon context.Context
	release       func()
}

func watchInterrupts(parent context.Context, w io.Writer) *interrupts {
	stop, cancelStop := context.WithCancelCause(parent)
	abandon, cancelAbandon := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(w, "\n%s: stopping the producers and draining briefly; interrupt again to abandon the drain and cleanup and write the partial results at once\n", s)
			cancelStop(fmt.Errorf("%s", s))
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(w, "\n%s again: abandoning the drain and cleanup, writing the partial results\n", s)
			cancelAbandon(fmt.Errorf("%s twice", s))
		case <-done:
		}
	}()
	return &interrupts{stop: stop, abandon: abandon, release: func() {
		signal.Stop(sigs)
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
