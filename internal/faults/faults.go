// Package faults runs a fault schedule during a run and measures what each
// fault cost. A Fault is any action on the system under test (a node
// killed or paused, a link cut); the schedule runs on the runner's clock,
// each fault becomes an event in the results, and Recover reads, from the
// run's intervals, how deep the publish rate fell and how long it took to
// come back. The package knows nothing of brokers: faults on local
// clusters are made by package local.
package faults

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Fault is an action on the system under test.
type Fault interface {
	// Apply acts and returns what it acted on, in words ("node 2, the
	// leader of topic t partition 0"). topics are the run's, for faults
	// aimed at a partition's leader.
	Apply(ctx context.Context, topics []string) (target string, err error)
	// String describes the fault as scheduled ("kill leader").
	String() string
}

// Scheduled is a fault and when it fires: At after the measurement
// starts.
type Scheduled struct {
	At    time.Duration
	Fault Fault
}

// applyTimeout bounds one fault's action.
const applyTimeout = 30 * time.Second

// Schedule runs faults at their times and records an event for each.
type Schedule struct {
	mu     sync.Mutex
	events []results.FaultEvent
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// Start runs the schedule in the background from start (clock
// nanoseconds); origin is the run's time origin, from which event times
// are counted, as interval times are. Faults whose time has not come when
// ctx ends or Stop is called do not fire.
func Start(ctx context.Context, schedule []Scheduled, topics []string, origin, start int64) *Schedule {
	ctx, cancel := context.WithCancel(ctx)
	s := &Schedule{cancel: cancel}
	sorted := append([]Scheduled(nil), schedule...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At < sorted[j].At })
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for _, f := range sorted {
			timer.Reset(time.Duration(start + int64(f.At) - clock.Now()))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			at := clock.Now()
			actx, acancel := context.WithTimeout(ctx, applyTimeout)
			target, err := f.Fault.Apply(actx, topics)
			acancel()
			ev := results.FaultEvent{AtSeconds: float64(at-origin) / 1e9, Action: f.Fault.String(), Target: target,
				TookSeconds: float64(clock.Now()-at) / 1e9}
			if err != nil {
				ev.Error = err.Error()
			}
			s.mu.Lock()
			s.events = append(s.events, ev)
			s.mu.Unlock()
		}
	}()
	return s
}

// Stop cancels the faults not yet fired, waits for one in progress and
// returns the events.
func (s *Schedule) Stop() []results.FaultEvent {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]results.FaultEvent(nil), s.events...)
}

// recoveredShare is the share of the pre-fault publish rate at which the
// rate counts as recovered.
const recoveredShare = 0.9

// Recover fills in ev's recovery figures from the run's measured
// intervals: the publish rate before the faults (mean of up to five
// intervals that ended before baseline, the first fault's time: a later
// fault's own "before" is already disturbed), the lowest rate after ev,
// the time from ev to the end of the first interval after it whose rate
// is back above 90% of the rate before, and the largest publish latency
// from ev until then.
func Recover(ev *results.FaultEvent, intervals []results.Interval, baseline float64) {
	var before []float64
	for _, iv := range intervals {
		if iv.Phase == results.Measure && iv.EndSeconds <= min(baseline, ev.AtSeconds) {
			before = append(before, iv.PublishRate)
		}
	}
	if len(before) > 5 {
		before = before[len(before)-5:]
	}
	if len(before) == 0 {
		return
	}
	r := &results.Recovery{}
	for _, v := range before {
		r.RateBefore += v / float64(len(before))
	}
	r.LowestRate = r.RateBefore
	for _, iv := range intervals {
		if iv.EndSeconds <= ev.AtSeconds || iv.Phase == results.Warmup {
			continue
		}
		r.LowestRate = min(r.LowestRate, iv.PublishRate)
		r.MaxPublishLatencyMs = max(r.MaxPublishLatencyMs, iv.PublishLatency.Max)
		if iv.StartSeconds >= ev.AtSeconds && iv.PublishRate >= recoveredShare*r.RateBefore {
			secs := iv.EndSeconds - ev.AtSeconds
			r.RecoverySeconds = &secs
			break
		}
	}
	ev.Recovery = r
}
