package runner

import (
	"context"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// TestOutagesRecorded: a stretch without acknowledgements while messages
// are in flight is recorded from the last acknowledgement to the next; a
// quiet stretch with nothing in flight is not an outage.
func TestOutagesRecorded(t *testing.T) {
	p := &producerWorker{stats: newProducerStats()}
	r := &run{producers: []*producerWorker{p}}
	p.stats.sent.Store(10)
	p.stats.acked.Store(5)
	before := clock.Now()
	p.stats.lastAck.Store(before)
	o := r.watchOutages(context.Background())
	time.Sleep(400 * time.Millisecond)
	p.stats.acked.Store(10)
	p.stats.lastAck.Store(clock.Now())
	time.Sleep(200 * time.Millisecond) // nothing in flight: no outage
	list := o.end()
	if len(list) != 1 {
		t.Fatalf("outages %+v: want one", list)
	}
	if d := float64(list[0].to-list[0].from) / 1e9; d < 0.39 || d > 0.5 {
		t.Errorf("outage of %.3f s, want about 0.4", d)
	}
	if got := longestFrom(list, before+int64(100*time.Millisecond), clock.Now()); got < 0.39 {
		t.Errorf("longest outage under way at the fault: %.3f s", got)
	}
	if got := longestFrom(list, clock.Now(), clock.Now()+1); got != 0 {
		t.Errorf("an outage after it ended: %.3f s", got)
	}
}
