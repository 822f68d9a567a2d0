package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInterruptStuckBroker: with the broker frozen (SIGSTOP), a first
// interrupt stops producing and a second abandons the drain and cleanup;
// the run exits 4 within seconds and its partial results are written.
func TestInterruptStuckBroker(t *testing.T) {
	b := lazyBroker.Get(t)
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(context.Background(), []string{"run", "../../workloads/quick.yaml", "--broker", b.Addr,
			"--warmup", "1s", "--duration", "60s", "--out", out}, IO{Out: &stdout, Err: &stderr})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "measure") {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start measuring:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Resume(); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(time.Second)
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	time.Sleep(time.Second)
	start := time.Now()
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after the second interrupt:\n%s", stderr.String())
	}
	if took := time.Since(start); code != ExitInterrupted || took > 5*time.Second {
		t.Errorf("exit %d after %s (want %d within 5 s)\n%s\n%s", code, took, ExitInterrupted, stdout.String(), stderr.String())
	}
	res, err := results.Read(out)
	if err != nil || !res.Partial || res.Counts.Sent == 0 {
		t.Errorf("partial results: %v %+v", err, res)
	}
}
