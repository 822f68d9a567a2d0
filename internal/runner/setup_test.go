package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestSetupBoundScales: the setup bound grows with topics, groups and
// consumers, from 60 s.
func TestSetupBoundScales(t *testing.T) {
	wl := func(topics, subs, consumers int) *workload.Workload {
		return &workload.Workload{Topics: topics, SubscriptionsPerTopic: subs, ConsumersPerSubscription: consumers}
	}
	for _, tc := range []struct {
		name string
		w    *workload.Workload
		want time.Duration
	}{
		// No workload: the base alone.
		{"none", nil, 60 * time.Second},
		// A producer-only workload: the base and its topic.
		{"no consumers", wl(1, 0, 0), 61 * time.Second},
		// One topic, one group of one consumer.
		{"smallest", wl(1, 1, 1), 62*time.Second + 250*time.Millisecond},
		// 100 topics, 3 groups of one consumer each: 100 + 300 + 75 s.
		{"100 topics, 300 groups", wl(100, 3, 1), 60*time.Second + 100*time.Second + 300*time.Second + 75*time.Second},
		// 100 topics, one group of 3 consumers each: 100 + 100 + 75 s.
		{"100 topics, 100 groups of 3", wl(100, 1, 3), 60*time.Second + 100*time.Second + 100*time.Second + 75*time.Second},
	} {
		if got := SetupBound(tc.w); got != tc.want {
			t.Errorf("%s: SetupBound = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestDefaultSetupTimeoutIsTheBound: a run given no setup timeout takes
// the workload's SetupBound, and one given a timeout keeps it.
func TestDefaultSetupTimeoutIsTheBound(t *testing.T) {
	w := baseWorkload()
	w.Topics, w.SubscriptionsPerTopic, w.ConsumersPerSubscription = 100, 3, 1
	if got := newRun(Config{Workload: w}).cfg.SetupTimeout; got != SetupBound(w) {
		t.Errorf("default setup timeout %s, want SetupBound %s", got, SetupBound(w))
	}
	if got := newRun(Config{Workload: w, SetupTimeout: time.Second}).cfg.SetupTimeout; got != time.Second {
		t.Errorf("setup timeout %s, want the 1s given", got)
	}
}

// unsettledGroups is a driver whose consumer groups never settle: its
// WaitSubscription waits until the setup's bound runs out.
type unsettledGroups struct{ driver.Driver }

func (unsettledGroups) WaitSubscription(ctx context.Context, topic, sub string, members int) error {
	<-ctx.Done()
	return fmt.Errorf("consumer group %q did not settle: last seen in state PreparingRebalance: %w", sub, ctx.Err())
}

// syncWriter is a log safe for the runner's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestSetupTimeoutSaysWhatItWaitedFor: a setup that outlasts its bound
// fails with an error that says so, with the bound and the driver's
// reason; while it waits, it says every 5 s which group it waits for.
func TestSetupTimeoutSaysWhatItWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := baseWorkload()
		w.SubscriptionsPerTopic = 2
		log := &syncWriter{}
		_, err := Run(context.Background(), Config{Workload: w, Driver: unsettledGroups{memory.NewBroker().NewDriver()},
			SetupTimeout: 12 * time.Second, Log: log, ID: "test"})
		if !errors.Is(err, ErrSetup) || !errors.Is(err, ErrSetupTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v: want a setup failure for its bound", err)
		}
		for _, want := range []string{"bound of 12s", `"bb-test-000-sub-000" did not settle`, "PreparingRebalance"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
		out := log.String()
		if !strings.Contains(out, "waiting for 2 consumers in 2 groups to join (12s of the setup's 12s left)") {
			t.Errorf("log lacks the wait and its bound:\n%s", out)
		}
		// Reports at 5 s and 10 s, none after the setup ended.
		if n := strings.Count(out, "still waiting for consumers to join: group bb-test-000-sub-000 (topic bb-test-000, members: 1); 0 of 2 groups settled"); n != 2 {
			t.Errorf("%d reports of the group waited for, want 2:\n%s", n, out)
		}
		if !strings.Contains(out, "(7s of the setup's 12s left)") || !strings.Contains(out, "(2s of the setup's 12s left)") {
			t.Errorf("reports lack the time left:\n%s", out)
		}
	})
}

// TestSetupInTimeIsQuiet: groups that settle at once leave no report.
func TestSetupInTimeIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := baseWorkload()
		w.Duration, w.Warmup, w.MessageLimit = 0, 0, 10
		log := &syncWriter{}
		if _, err := Run(context.Background(), Config{Workload: w, Driver: memory.NewBroker().NewDriver(), Log: log}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(log.String(), "still waiting") {
			t.Errorf("a quick setup reported waiting:\n%s", log.String())
		}
	})
}

// TestInFlightWindow: at most 16384 messages, at most maxBytes of them
// per producer, all producers' copies within 1 GiB, and never fewer
// than 16.
func TestInFlightWindow(t *testing.T) {
	for _, c := range []struct{ size, producers, maxBytes, want int }{
		{100, 1, DefaultMaxInFlightBytes, 16384},
		{1024, 1, DefaultMaxInFlightBytes, 16384},
		{4096, 1, DefaultMaxInFlightBytes, 8192},
		{1024, 1024, DefaultMaxInFlightBytes, 1024},
		{64 << 20, 1, DefaultMaxInFlightBytes, 16},
		{100, 1, 1000, 16},
		{0, 1, DefaultMaxInFlightBytes, 16384},
	} {
		if got := InFlightWindow(c.size, c.producers, c.maxBytes); got != c.want {
			t.Errorf("InFlightWindow(%d, %d, %d) = %d, want %d", c.size, c.producers, c.maxBytes, got, c.want)
		}
	}
}
