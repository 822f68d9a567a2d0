package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/proc"
)

// fakeKind is a broker kind whose nodes are shell loops: every part of a
// cluster's lifecycle but the broker itself, in milliseconds.
type fakeKind struct {
	// ready answers readiness checks; nil: ready at once.
	ready func(ctx context.Context) error
	// ports are the listeners of each node, with the port its layout
	// prefers (0: any).
	ports map[string]int
}

func (fakeKind) Name() string                                                { return "fake" }
func (fakeKind) Product() string                                             { return "Fake Broker" }
func (fakeKind) Version() string                                             { return "1.0" }
func (fakeKind) Install(context.Context, string, func(string, ...any)) error { return nil }
func (fakeKind) Configure(context.Context, *Cluster, bool) error             { return nil }

func (k fakeKind) Layout(c *Cluster) []*Node {
	var nodes []*Node
	for i := 1; i <= c.Brokers; i++ {
		nodes = append(nodes, &Node{ID: i, Roles: []string{"broker"}, Host: LoopbackHost(c.Brokers == 1, false, i),
			Ports: maps.Clone(k.ports), Dir: filepath.Join(c.StateDir, "node-"+string(rune('0'+i)))})
	}
	return nodes
}

// Command is a shell loop whose command line carries the node's
// directory, as a broker's does.
func (fakeKind) Command(_ *Cluster, n *Node) []string {
	return []string{"sh", "-c", "while :; do sleep 0.1; done", n.Marker()}
}

func (k fakeKind) Ready(ctx context.Context, _ *Cluster) error {
	if k.ready == nil {
		return nil
	}
	return k.ready(ctx)
}

// syncBuffer is a log safe to write from the cluster's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func fakeCluster(dir string, brokers int, startedBy string) *Cluster {
	return &Cluster{Kind: fakeKind{}, StateDir: dir, Brokers: brokers, StartedBy: startedBy, Log: &syncBuffer{}}
}

func pids(t *testing.T, st Status) []int {
	t.Helper()
	var out []int
	for _, n := range st.Nodes {
		if !n.Running {
			t.Fatalf("node %d is not running: %+v", n.ID, st)
		}
		out = append(out, n.PID)
	}
	return out
}

// TestUpKeepsClusterOfAnotherShape: a cluster 'local up' started, running
// or stopped, is neither stopped nor replaced by an Up of another shape,
// whether 'local up' or a run asks, unless told to (Replace); the refusal
// says what it would delete. A cluster a run left behind is replaced,
// and that said.
func TestUpKeepsClusterOfAnotherShape(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	three := fakeCluster(dir, 3, StartedByUser)
	st, err := three.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer three.Down()
	before := pids(t, st)
	if st.StartedBy != StartedByUser || st.Brokers != 3 || st.RunPID != 0 {
		t.Fatalf("status %+v: want 3 brokers started by 'local up'", st)
	}
	data := filepath.Join(st.Nodes[0].Dir, "topic-0", "00000.log")
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, make([]byte, 2500), 0o644); err != nil {
		t.Fatal(err)
	}

	refused := func(c *Cluster, state string) {
		t.Helper()
		_, err := c.Up(ctx)
		var re *ReplaceError
		if !errors.As(err, &re) {
			t.Fatalf("Up of 1 broker (%s) over the 3 'local up' started: %v, want a ReplaceError", c.startedBy(), err)
		}
		msg := err.Error()
		for _, want := range []string{"3 brokers", state, "started by 'local up'", "(1 broker, release 1.0)", "2.5 kB", "nothing was changed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal %q lacks %q", msg, want)
			}
		}
		if _, err := os.Stat(data); err != nil {
			t.Errorf("the refused Up deleted the cluster's data: %v", err)
		}
		if got := (&Cluster{Kind: fakeKind{}, StateDir: dir}).Status(); got.Brokers != 3 || got.StartedBy != StartedByUser {
			t.Errorf("the refused Up changed the record: %+v", got)
		}
	}
	for _, by := range []string{StartedByUser, StartedByRun} {
		refused(fakeCluster(dir, 1, by), "running")
	}
	if after := pids(t, three.Status()); !equalInts(after, before) {
		t.Fatalf("the running cluster's nodes changed from %v to %v", before, after)
	}
	if err := three.Down(); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{StartedByUser, StartedByRun} {
		refused(fakeCluster(dir, 1, by), "stopped")
	}

	// The same shape starts again with its data.
	again := fakeCluster(dir, 3, StartedByRun)
	if _, err := again.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if st := again.Status(); !st.Running || st.StartedBy != StartedByUser {
		t.Errorf("a run starting the stopped cluster again: %+v, want it running and still the user's", st)
	}
	if _, err := os.Stat(data); err != nil {
		t.Errorf("starting the cluster again lost its data: %v", err)
	}

	// Told to, Up replaces it: its nodes stopped, its data gone.
	one := fakeCluster(dir, 1, StartedByUser)
	one.Replace = true
	st, err = one.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Down()
	if st.Brokers != 1 || len(st.Nodes) != 1 || !st.Running {
		t.Fatalf("after --replace: %+v", st)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the replaced cluster's data is still there (%v)", err)
	}
	if !strings.Contains(one.Log.(*syncBuffer).String(), "replacing the fake cluster recorded in "+dir+" (3 brokers, release 1.0; running, started by 'local up')") {
		t.Errorf("the replacement was not said:\n%s", one.Log)
	}
	if err := one.Down(); err != nil {
		t.Fatal(err)
	}

	// A cluster a run left behind (its process gone) is brokerbench's
	// own: a run replaces it, and so does 'local up', saying so. A run in
	// progress keeps its cluster.
	leftBy := func(pid int, start uint64) {
		rewriteRecord(t, dir, func(r *record) { r.StartedBy, r.Run = StartedByRun, &runOwner{PID: pid, Start: start} })
	}
	leftBy(1<<30, 1)
	run := fakeCluster(dir, 2, StartedByRun)
	if st, err = run.Up(ctx); err != nil {
		t.Fatalf("a run replacing the cluster a run left: %v", err)
	}
	defer run.Down()
	if st.Brokers != 2 || st.StartedBy != StartedByRun || st.RunPID != os.Getpid() {
		t.Errorf("the run's cluster: %+v", st)
	}
	if err := run.Down(); err != nil {
		t.Fatal(err)
	}
	parent := os.Getppid() // a live process other than this one
	leftBy(parent, proc.StartTime(parent))
	var re *ReplaceError
	if _, err := fakeCluster(dir, 1, StartedByRun).Up(ctx); !errors.As(err, &re) || !strings.Contains(err.Error(), fmt.Sprintf("started by a run in progress (pid %d)", parent)) {
		t.Errorf("Up over the cluster of a run in progress: %v", err)
	}
	leftBy(1<<30, 1)
	user := fakeCluster(dir, 1, StartedByUser)
	if st, err = user.Up(ctx); err != nil {
		t.Fatalf("'local up' over the cluster a run left: %v", err)
	}
	defer user.Down()
	if st.StartedBy != StartedByUser || !strings.Contains(user.Log.(*syncBuffer).String(), "(2 brokers, release 1.0; stopped, started by a run that has ended) with one of 1 broker, release 1.0: its data is deleted") {
		t.Errorf("'local up' over the cluster a run left: %+v\n%s", st, user.Log)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func rewriteRecord(t *testing.T, dir string, edit func(*record)) {
	t.Helper()
	path := filepath.Join(dir, "cluster.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	edit(&r)
	if data, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWaitSaysWhatAndSeesNodesStop: while a cluster does not get ready,
// Up says every few seconds what it waits for and the last answer; a node
// stopped from outside ('local down' in another shell, a kill) ends the
// wait at once with what happened, instead of a silent wait to the limit.
func TestWaitSaysWhatAndSeesNodesStop(t *testing.T) {
	old := progressEvery
	progressEvery = 200 * time.Millisecond
	defer func() { progressEvery = old }()
	notYet := fakeKind{ready: func(context.Context) error { return errors.New("2 of 3 brokers registered") }}

	for _, tc := range []struct {
		name string
		stop func(c *Cluster) error
		want string
	}{
		// local down in another shell: the PID files go with the nodes.
		{"local down", func(c *Cluster) error { return (&Cluster{Kind: c.Kind, StateDir: c.StateDir}).Down() }, "from outside"},
		// A kill: the PID file stays, the process is gone.
		{"kill", func(c *Cluster) error { return c.Node(2).Kill() }, "node 2 (pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := &syncBuffer{}
			c := &Cluster{Kind: notYet, StateDir: dir, Brokers: 3, Log: log}
			defer c.Down()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := c.Up(ctx); done <- err }()
			// Wait until Up has said at least once what it waits for.
			for !strings.Contains(log.String(), "last answer: 2 of 3 brokers registered") {
				select {
				case err := <-done:
					t.Fatalf("Up returned before the nodes were stopped: %v", err)
				case <-time.After(50 * time.Millisecond):
				}
			}
			if !strings.Contains(log.String(), "waiting for the fake cluster in "+dir+" to be ready") {
				t.Errorf("the progress line does not say what it waits for:\n%s", log)
			}
			if err := tc.stop(c); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || ctx.Err() != nil {
					t.Errorf("Up after a node was stopped: %v, want an error saying %q", err, tc.want)
				}
				if d := time.Since(stopped); d > 5*time.Second {
					t.Errorf("Up took %s to see the node stopped", d)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("Up still waits 15 s after its nodes were stopped from outside")
			}
		})
	}
}

// TestExitReason: a node's process that this process started says how it
// ended: a signal from outside, or its own exit status.
func TestExitReason(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		script string
		signal syscall.Signal
		want   string
	}{
		{"exit 3", 0, "exited with status 3"},
		{": > \"$0.ready\"; while :; do sleep 0.1; done", syscall.SIGKILL, "was ended by signal 9 (killed) from outside"},
		{"trap 'exit 143' TERM; : > \"$0.ready\"; while :; do sleep 0.1; done", syscall.SIGTERM, "exited with status 143, as it does when sent signal 15 (terminated) from outside"},
	} {
		n := &Node{ID: 1, Dir: dir}
		ready := filepath.Join(dir, fmt.Sprintf("case-%d", i))
		pid, err := n.start([]string{"sh", "-c", tc.script, ready, n.Marker()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.signal != 0 {
			// The shell has set its trap once it has made the file.
			for wait := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(ready + ".ready"); err == nil {
					break
				}
				if time.Now().After(wait) {
					t.Fatalf("%q: the shell did not start in 30 s", tc.script)
				}
			}
			_ = syscall.Kill(pid, tc.signal)
		}
		deadline := time.Now().Add(5 * time.Second)
		for n.exitReason(pid) == "is no longer running" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := n.exitReason(pid); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.script, got, tc.want)
		}
	}
}

// TestWaitIsBoundedWhenReadyIgnoresItsContext: a readiness check that
// never returns does not hold the wait past its limit.
func TestWaitIsBoundedWhenReadyIgnoresItsContext(t *testing.T) {
	c := &Cluster{Kind: fakeKind{}, StateDir: t.TempDir(), Log: &syncBuffer{}}
	block := make(chan struct{})
	defer close(block)
	done := make(chan error, 1)
	go func() {
		done <- c.waitFor(context.Background(), time.Second, "the fake cluster to be ready", nil, func(context.Context) error { <-block; return nil })
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "gave up waiting for the fake cluster to be ready after 1s") {
			t.Errorf("waitFor: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitFor waits on a check that never returns")
	}
}

// TestLayoutPortIsPreferredWhereFree: a listener's port in the layout (a
// broker's usual one) is taken where free; where another process holds
// it, the listener gets a free port instead of failing the start.
func TestLayoutPortIsPreferredWhereFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	usual := l.Addr().(*net.TCPAddr).Port
	c := &Cluster{Kind: fakeKind{ports: map[string]int{"admin": usual, "other": 0}}, StateDir: t.TempDir(), Brokers: 1}
	// Held by another process: a free port instead.
	if err := c.plan(record{}, true); err != nil {
		t.Fatal(err)
	}
	if got := c.Node(1).Ports["admin"]; got == usual || got == 0 {
		t.Errorf("admin port %d while %d is held; want another free port", got, usual)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.plan(record{}, true); err != nil {
		t.Fatal(err)
	}
	if got := c.Node(1).Ports["admin"]; got != usual {
		t.Errorf("admin port %d; want the layout's %d, which is free", got, usual)
	}
	if got := c.Node(1).Ports["other"]; got == 0 || got == usual {
		t.Errorf("other port %d; want a free port of its own", got)
	}
}
