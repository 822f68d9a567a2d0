package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowInstall is a kind whose Install takes a while and counts how many
// run at once.
type slowInstall struct {
	fakeKind
	running, most *atomic.Int32
}

func (k slowInstall) Install(context.Context, string, func(string, ...any)) error {
	n := k.running.Add(1)
	defer k.running.Add(-1)
	for m := k.most.Load(); n > m && !k.most.CompareAndSwap(m, n); m = k.most.Load() {
	}
	time.Sleep(30 * time.Millisecond)
	return nil
}

// TestInstallsOfAKindTakeTurns: installs of one kind into one cache,
// started together, run one at a time, and the waiting ones say so.
func TestInstallsOfAKindTakeTurns(t *testing.T) {
	k := slowInstall{running: &atomic.Int32{}, most: &atomic.Int32{}}
	dir := t.TempDir()
	log := &syncBuffer{}
	logf := func(f string, a ...any) { fmt.Fprintf(log, f+"\n", a...) }
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := install(context.Background(), k, dir, logf); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := k.most.Load(); m != 1 {
		t.Errorf("%d installs ran at once, want 1", m)
	}
	if !strings.Contains(log.String(), "waiting for another brokerbench to finish installing") {
		t.Errorf("no install said it waited:\n%s", log.String())
	}
}

// TestInstallWaitEndsWithItsContext: an install waiting for another
// gives up when its context ends, saying what it waited for.
func TestInstallWaitEndsWithItsContext(t *testing.T) {
	k := slowInstall{running: &atomic.Int32{}, most: &atomic.Int32{}}
	dir := t.TempDir()
	release := make(chan struct{})
	holding := make(chan struct{})
	go func() {
		_ = install(context.Background(), blockingInstall{fakeKind{}, holding, release}, dir, func(string, ...any) {})
	}()
	<-holding
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := install(ctx, k, dir, func(string, ...any) {})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for another install") {
		t.Errorf("error %v, want the wait's end", err)
	}
	if k.most.Load() != 0 {
		t.Error("the install ran while another held the lock")
	}
}

// blockingInstall holds the install lock until release is closed.
type blockingInstall struct {
	fakeKind
	holding chan<- struct{}
	release <-chan struct{}
}

func (k blockingInstall) Install(context.Context, string, func(string, ...any)) error {
	close(k.holding)
	<-k.release
	return nil
}
