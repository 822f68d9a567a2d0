package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestSettleErrorSaysWhatWasSeen: the error of a group that did not
// settle names the group, its last state and the last error describing
// it, and still wraps the cause.
func TestSettleErrorSaysWhatWasSeen(t *testing.T) {
	goal := groupGoal{group: "bb-x-001-sub-001", members: 3, partitions: 6}
	for _, tc := range []struct {
		name    string
		last    *groupState
		lastErr error
		want    []string
		notWant []string
	}{
		// Described, still rebalancing, no error.
		{"rebalancing", &groupState{state: "PreparingRebalance", members: 2, assigned: 0}, nil,
			[]string{`"bb-x-001-sub-001"`, "state PreparingRebalance", "2 of 3 members joined", "0 of 6 partitions assigned"},
			[]string{"DescribeGroups error"}},
		// Every DescribeGroups failed: the error says so and gives the last one.
		{"never described", nil, kerr.CoordinatorLoadInProgress,
			[]string{"never described", "3 members and 6 partitions", "last DescribeGroups error: COORDINATOR_LOAD_IN_PROGRESS"}, nil},
		// Described once, then the describes failed: both are told.
		{"seen then failing", &groupState{state: "Stable", members: 3, assigned: 4}, kerr.NotCoordinator,
			[]string{"state Stable", "3 of 3 members", "4 of 6 partitions", "NOT_COORDINATOR"}, nil},
		// Nothing at all: the wait ended before any answer.
		{"nothing", nil, nil, []string{"never described"}, []string{"()", "DescribeGroups error"}},
		// An empty state is said to be unknown, not left blank.
		{"empty state", &groupState{}, nil, []string{"state unknown"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := settleError(goal, tc.last, tc.lastErr, context.DeadlineExceeded)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v does not wrap the cause", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("%q has %q", err, w)
				}
			}
		})
	}
}

// TestAwaitSettled: the wait ends once the group reaches its goal; a
// group that never does fails with its last state and the last error
// that was not caused by the wait ending.
func TestAwaitSettled(t *testing.T) {
	goal := groupGoal{group: "g", members: 2, partitions: 4}
	t.Run("settles", func(t *testing.T) {
		answers := []groupState{{state: "PreparingRebalance", members: 1}, {state: "CompletingRebalance", members: 2}, {state: "Stable", members: 2, assigned: 4}}
		calls := 0
		err := awaitSettled(context.Background(), goal, time.Millisecond, func(context.Context) (groupState, error) {
			calls++
			return answers[min(calls, len(answers))-1], nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("err %v after %d describes, want nil after 3", err, calls)
		}
	})
	t.Run("never settles", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			calls := 0
			err := awaitSettled(ctx, goal, 5*time.Millisecond, func(ctx context.Context) (groupState, error) {
				calls++
				if calls%2 == 0 {
					return groupState{}, kerr.CoordinatorNotAvailable
				}
				return groupState{state: "PreparingRebalance", members: 1}, nil
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want the deadline", err)
			}
			for _, w := range []string{"state PreparingRebalance", "1 of 2 members", "COORDINATOR_NOT_AVAILABLE"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	})
	t.Run("describe cut by the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The last describe fails only because the wait ended: the error
			// before it is the one told. A describe takes 7 ms and the next
			// starts 5 ms after it, so the ninth, from 96 ms, is cut at 100.
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := awaitSettled(ctx, goal, 5*time.Millisecond, func(ctx context.Context) (groupState, error) {
				select {
				case <-ctx.Done():
					return groupState{}, ctx.Err()
				case <-time.After(7 * time.Millisecond):
					return groupState{}, kerr.NotCoordinator
				}
			})
			if !strings.Contains(err.Error(), "never described") || !strings.Contains(err.Error(), "NOT_COORDINATOR") {
				t.Errorf("%q: want the group never described and the last real error", err)
			}
		})
	})
}
