package runner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestSchedProbeSamplesInBursts: the probe records probeBurst sleeps a
// burst, between gaps of probeGapMin to probeGapMax, and nothing after it
// ends. Under synctest every sleep is on time, so what it recorded is
// zero lateness.
func TestSchedProbeSamplesInBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const run = 60 * time.Second
		p := startSchedProbe(context.Background())
		time.Sleep(run)
		l := p.end()
		if l == nil {
			t.Fatal("the probe recorded nothing in a minute")
		}
		n := p.late.Total()
		burst := (probeBurst + 1) * probeSleep
		most := int64(run/(burst+probeGapMin)+1) * probeBurst
		least := int64(run/(burst+probeGapMax)) * probeBurst
		if n < least || n > most {
			t.Errorf("recorded %d sleeps in %s, want %d to %d", n, run, least, most)
		}
		if every := int64(run / probeSleep); n > every/4 {
			t.Errorf("recorded %d sleeps, more than a quarter of sleeping all the time (%d)", n, every)
		}
		if l.P99 != 0 || l.Max != 0 {
			t.Errorf("on-time sleeps recorded as late: p99 %.3f ms, max %.3f ms", l.P99, l.Max)
		}
		time.Sleep(time.Second)
		if got := p.late.Total(); got != n {
			t.Errorf("the probe recorded %d more sleeps after it ended", got-n)
		}
	})
}
