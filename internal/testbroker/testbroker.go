// Package testbroker starts a real local Kafka broker for integration tests:
// one per test binary, on a port of the caller's choosing, with its data in
// a temporary directory, stopped by PID when the tests end.
package testbroker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/local"
)

// Kafka starts a broker on port and returns its address and a function that
// stops it and removes its data. Call it from TestMain; it exits the test
// binary if the broker cannot be started, because the integration tests are
// meaningless without it.
func Kafka(port int) (addr string, stop func()) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("brokerbench-test-kafka-%d-", port))
	if err != nil {
		fail(err)
	}
	k := local.NewKafka(port)
	k.StateDir = dir
	k.HeapMB = 512
	k.Log = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := k.Up(ctx)
	if err != nil {
		_ = k.Down()
		fail(err)
	}
	return st.Address, func() {
		if err := k.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "stop test broker:", err)
		}
		_ = os.RemoveAll(dir)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "integration tests need a local Kafka broker (Java 17+ and Maven): %v\n", err)
	os.Exit(1)
}

// Main is a TestMain body: it starts the broker, runs the tests, stops it.
func Main(m *testing.M, port int, addr *string) {
	a, stop := Kafka(port)
	*addr = a
	code := m.Run()
	stop()
	os.Exit(code)
}
