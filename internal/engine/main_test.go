package engine

import (
	"bytes"
	"os"
	"sync"
	"testing"

	// The tests of targets and local clusters use the Kafka driver's
	// registration; no test here reaches a Kafka broker.
	_ "github.com/brokerbench/brokerbench/internal/brokers/all"
)

func TestMain(m *testing.M) {
	// Runs made by the tests record their topics in a registry of their
	// own, not the user's.
	dir, err := os.MkdirTemp("", "brokerbench-test-registry-")
	if err != nil {
		panic(err)
	}
	os.Setenv(RegistryEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

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
