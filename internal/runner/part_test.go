package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
)

// runPart runs one part of a workload with one producer and one consumer
// on the reference broker and reports whether it said its producers sent
// their whole limit.
func runPart(t *testing.T, limit int64) (sentAll bool) {
	t.Helper()
	d := memory.NewBroker().NewDriver()
	if err := d.CreateTopic(context.Background(), driver.TopicSpec{Name: "part", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	w := baseWorkload()
	w.Warmup, w.Duration, w.ProducerRate, w.MessageLimit = 0, time.Second, 1000, limit
	allSent, caughtUp := make(chan struct{}), make(chan struct{})
	close(caughtUp)
	var said atomic.Bool
	part := &Part{
		Topics: []string{"part"}, Producers: []int{0}, Consumers: []int{0}, AllSent: allSent, CaughtUp: caughtUp,
		SentAll: func() { said.Store(true); close(allSent) },
		Ready:   func(context.Context) (int64, error) { return clock.Now(), nil },
	}
	res, err := Run(context.Background(), Config{Workload: w, Driver: d, Part: part, MaxSendLag: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Sent == 0 || part.Outcomes[0].Sent != uint64(res.Counts.Sent) {
		t.Fatalf("part counts %+v, outcome %+v", res.Counts, part.Outcomes[0])
	}
	return said.Load()
}

// TestPartSaysSentAllOnlyAtItsLimit: a part's producers that reach their
// message limit say so; producers stopped at the end of the duration did
// not send a limit, and must not say so (the coordinator would then judge
// the run as one that sent its limit, and skip the rate check).
func TestPartSaysSentAllOnlyAtItsLimit(t *testing.T) {
	if runPart(t, 0) {
		t.Error("a part stopped at the end of its duration said it sent its whole limit")
	}
	if !runPart(t, 300) {
		t.Error("a part that sent its message limit did not say so")
	}
}
