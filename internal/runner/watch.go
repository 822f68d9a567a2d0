package runner

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
)

// leaders returns the leader of every partition of the run's topics, or
// nil if the driver cannot tell or the call fails.
func (r *run) leaders(ctx context.Context) map[string]map[int]int {
	place, ok := r.cfg.Driver.(driver.Placement)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	all := map[string]map[int]int{}
	for _, t := range r.topics {
		l, err := place.Leaders(ctx, t)
		if err != nil {
			return nil
		}
		all[t] = l
	}
	return all
}

// startMeasuring starts what watches the measurement from its start: the
// outage watcher, the scheduling probe and the fault schedule. The
// producers' longest waits count from here, not from the warmup.
func (r *run) startMeasuring(ctx context.Context, c *collector) {
	if r.outages == nil {
		r.outages, r.origin = r.watchOutages(r.cfg.Abandon), c.origin
		r.probe = startSchedProbe(r.cfg.Abandon)
		for _, p := range r.producers {
			p.free.longest.Store(0)
			p.stats.sendLongest.Store(0)
		}
	}
	if len(r.cfg.Faults) > 0 && r.schedule == nil {
		r.logf("fault schedule: %d fault(s) from the start of the measurement", len(r.cfg.Faults))
		r.schedule = faults.Start(ctx, r.cfg.Faults, r.topics, c.origin, c.measureFrom)
		r.leadersBefore = make(chan map[string]map[int]int, 1)
		go func() { r.leadersBefore <- r.leaders(r.cfg.Abandon) }()
	}
}

// recoverFaults fills in every fault event's recovery: from the intervals,
// and the longest stretch without acknowledgements from the outage
// watcher.
func (r *run) recoverFaults() {
	if len(r.res.Faults) == 0 {
		return
	}
	list := r.outageList
	if r.leadersBefore != nil {
		if before, after := <-r.leadersBefore, r.leaders(r.cfg.Abandon); before != nil && after != nil {
			moved := 0
			for t, parts := range before {
				for p, l := range parts {
					if after[t][p] != l {
						moved++
					}
				}
			}
			r.res.LeaderMoves = &moved
		}
	}
	for i := range r.res.Faults {
		ev := &r.res.Faults[i]
		faults.Recover(ev, r.res.Intervals, r.res.Faults[0].AtSeconds)
		if ev.Recovery == nil {
			continue
		}
		from, to := r.origin+int64(ev.AtSeconds*1e9), int64(math.MaxInt64)
		if rs := ev.Recovery.RecoverySeconds; rs != nil {
			to = from + int64(*rs*1e9)
		}
		ev.Recovery.UnavailableSeconds = longestFrom(list, from, to)
	}
}

// stopFaults stops the fault schedule and records its events.
func (r *run) stopFaults() {
	if r.schedule == nil {
		return
	}
	r.res.Faults = r.schedule.Stop()
	for _, ev := range r.res.Faults {
		if ev.Error != "" {
			r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("fault %q at %.1f s failed: %s", ev.Action, ev.AtSeconds, ev.Error))
		}
	}
}
