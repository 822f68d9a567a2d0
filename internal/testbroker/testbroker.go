// Package testbroker starts real local brokers (Kafka, and the other kinds
// brokerbench runs locally) for integration tests, on ports of the
// caller's choosing, with their data in temporary directories, stopped by
// PID when the tests end. A kind is started through its broker's module,
// which the test's package must link (package brokers/all links every
// one). Under -short none is started: the tests that
// need one skip (Need).
package testbroker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
)

// Broker is a running test broker or cluster.
type Broker struct {
	// Addr is the bootstrap address (the first broker's).
	Addr string
	// Cluster is the local cluster, for tests that act on its nodes.
	Cluster *local.Cluster
	dir     string
}

// Start starts a single Kafka broker on port.
func Start(port int) (*Broker, error) {
	return StartCluster(port, 1, nil)
}

// StartCluster starts a local Kafka cluster of nodes brokers, their client
// listeners on port, with small heaps; configure, if not nil, adjusts it
// before it starts.
func StartCluster(port, nodes int, configure func(*local.Cluster)) (*Broker, error) {
	k, err := brokers.NewLocal("kafka", port, nodes)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("brokerbench-test-kafka-%d-", port))
	if err != nil {
		return nil, err
	}
	k.StateDir = dir
	k.HeapMB = 512
	if nodes > 1 {
		k.HeapMB = 384
	}
	k.Log = os.Stderr
	if configure != nil {
		configure(k)
	}
	return up(k, dir, Kafka)
}

// StartLocal starts one broker of a kind brokerbench runs locally
// ("nats", "redis"), as 'local up KIND' would, on port; configure, if
// not nil, adjusts it before it starts (its listeners, for a secured
// broker).
func StartLocal(kind string, port int, configure func(*local.Cluster)) (*Broker, error) {
	c, err := brokers.NewLocal(kind, port, 1)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("brokerbench-test-%s-%d-", kind, port))
	if err != nil {
		return nil, err
	}
	c.StateDir, c.Log = dir, os.Stderr
	if configure != nil {
		configure(c)
	}
	return up(c, dir, Local(kind))
}

// up starts c, with its state in dir; what names the broker in the error.
func up(c *local.Cluster, dir, what string) (*Broker, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := c.Up(ctx)
	if err != nil {
		_ = c.Down()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("integration tests need %s: %w", what, err)
	}
	return &Broker{Addr: st.Address(), Cluster: c, dir: dir}, nil
}

// Stop stops every node by its PID and removes the data.
func (b *Broker) Stop() {
	if err := b.Cluster.Down(); err != nil {
		fmt.Fprintln(os.Stderr, "stop test broker:", err)
	}
	_ = os.RemoveAll(b.dir)
}

// Pause freezes the first broker's process (SIGSTOP); Resume continues it.
func (b *Broker) Pause() error { return b.Cluster.Nodes()[0].Pause() }

// Resume continues a paused first broker (SIGCONT).
func (b *Broker) Resume() error { return b.Cluster.Nodes()[0].Resume() }

// Need skips t under -short: 'make test-fast' runs every test that needs
// no real broker, and a test that needs one says which (what: "a local
// Kafka broker (Java 17+ and Maven)") before it starts it. Every test
// that starts a broker calls it first, through Lazy.Get or itself.
func Need(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: skipped under -short ('make test' runs it)", what)
	}
}

// Kafka names the broker Start and StartCluster start, for Need.
const Kafka = "a local Kafka broker (Java 17+ and Maven)"

// Local names the broker StartLocal starts of kind, for Need.
func Local(kind string) string { return "a local " + kind + " broker" }

// Lazy is a test broker started on first use, so that the tests of a
// package that need no broker never wait for one, and under -short
// (see Need) none is started.
type Lazy struct {
	what  string
	start func() (*Broker, error)
	once  sync.Once
	b     *Broker
	err   error
}

// NewLazy returns a Kafka broker to be started on port when a test first
// asks.
func NewLazy(port int) *Lazy {
	return &Lazy{what: Kafka, start: func() (*Broker, error) { return Start(port) }}
}

// NewLazyLocal returns a broker of another kind (see StartLocal) to be
// started on port when a test first asks.
func NewLazyLocal(kind string, port int) *Lazy {
	return NewLazyLocalWith(kind, port, nil)
}

// NewLazyLocalWith is NewLazyLocal with a function that adjusts the
// broker before it starts (see StartLocal).
func NewLazyLocalWith(kind string, port int, configure func(*local.Cluster)) *Lazy {
	return &Lazy{what: Local(kind), start: func() (*Broker, error) { return StartLocal(kind, port, configure) }}
}

// Get starts the broker if it is not running yet and returns it; it
// skips the test under -short, and fails it if the broker cannot be
// started.
func (l *Lazy) Get(t testing.TB) *Broker {
	t.Helper()
	Need(t, l.what)
	l.once.Do(func() { l.b, l.err = l.start() })
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.b
}

// Stop stops the broker if one was started: a cleanup for Main, when a
// package's tests have a second lazy broker.
func (l *Lazy) Stop() {
	if l.b != nil {
		l.b.Stop()
	}
}

// Main is a TestMain body: it runs the tests, stops the broker if one was
// started, and runs the cleanups.
func (l *Lazy) Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	l.Stop()
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}
