package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestSettleWaitsForReplicas: a count that lags the acknowledgements and
// rises as replicas catch up is read until it reaches them.
func TestSettleWaitsForReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// 1000 acknowledged; the count rises by 100 every 300 ms from 400.
		count := func(context.Context) (int64, error) {
			return min(1000, 400+100*int64(time.Since(start)/(300*time.Millisecond))), nil
		}
		n, err := settle(context.Background(), count, func() int64 { return 1000 })
		if err != nil || n != 1000 {
			t.Fatalf("settle = %d, %v; want 1000", n, err)
		}
		if took := time.Since(start); took < 1800*time.Millisecond || took > 2200*time.Millisecond {
			t.Errorf("settled after %s; the count reached 1000 after 1.8 s", took)
		}
	})
}

// TestSettleAcceptsLoss: a count that stays below the acknowledgements
// (the broker lost some) is final after storedSettle unchanged.
func TestSettleAcceptsLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		count := func(context.Context) (int64, error) {
			if time.Since(start) < time.Second {
				return 900, nil
			}
			return 950, nil
		}
		n, err := settle(context.Background(), count, func() int64 { return 1000 })
		if err != nil || n != 950 {
			t.Fatalf("settle = %d, %v; want 950", n, err)
		}
		took := time.Since(start)
		if want := time.Second + storedSettle; took < want || took > want+time.Second {
			t.Errorf("settled after %s; want about %s (the last change plus %s)", took, want, storedSettle)
		}
	})
}

// TestSettleBounded: the wait ends with the caller's context, keeping the
// last count, and a driver error is returned as it is.
func TestSettleBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		rising := func(context.Context) (int64, error) { return int64(time.Since(start) / time.Millisecond), nil }
		n, err := settle(ctx, rising, func() int64 { return 1 << 40 })
		if err != nil || n < 2500 || n > 3000 {
			t.Fatalf("settle = %d, %v; want the count read just before 3 s", n, err)
		}
	})
	broken := errors.New("broker gone")
	if _, err := settle(context.Background(), func(context.Context) (int64, error) { return 0, broken }, func() int64 { return 1 }); !errors.Is(err, broken) {
		t.Fatalf("settle error = %v; want %v", err, broken)
	}
}

// resettingCounter is a written counter the broker keeps in memory.
type resettingCounter struct{ driver.Driver }

func (resettingCounter) Written(context.Context, string) (int64, error) { return 0, nil }
func (resettingCounter) WrittenResets() bool                            { return true }

// countingOnly is a written counter that survives restarts.
type countingOnly struct{ driver.Driver }

func (countingOnly) Written(context.Context, string) (int64, error) { return 0, nil }

// TestWrittenCountThatResetsIsLeftOutOfRunsWithFaults: a count the broker
// keeps in memory proves nothing in a run whose faults may restart
// brokers, and the run leaves it out; without faults, or for a count
// that survives restarts, it is kept.
func TestWrittenCountThatResetsIsLeftOutOfRunsWithFaults(t *testing.T) {
	w := &workload.Workload{Name: "w", Topics: 1, PartitionsPerTopic: 1, ProducersPerTopic: 1}
	fault := []faults.Scheduled{{At: time.Second}}
	for _, tc := range []struct {
		name   string
		d      driver.Driver
		faults []faults.Scheduled
		want   bool
	}{
		{"resetting, faults", resettingCounter{}, fault, false},
		{"resetting, no faults", resettingCounter{}, nil, true},
		{"surviving, faults", countingOnly{}, fault, true},
	} {
		r := &run{cfg: Config{Driver: tc.d, Faults: tc.faults}, w: w}
		if _, ok := r.writtenCounter(); ok != tc.want {
			t.Errorf("%s: counted %v, want %v", tc.name, ok, tc.want)
		}
	}
}

// blockingDriver wraps the memory driver so that, after its first
// `after` sends, every Send blocks until its context ends, as a client
// does when the broker's flow control takes no more messages.
type blockingDriver struct {
	driver.Driver
	after int
}

func (d *blockingDriver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	p, err := d.Driver.NewProducer(ctx, spec, ack)
	return &blockingProducer{Producer: p, after: d.after, ack: ack}, err
}

type blockingProducer struct {
	driver.Producer
	after, sends int
	ack          driver.AckFunc
}

func (p *blockingProducer) Send(ctx context.Context, m *driver.Message) {
	if p.sends++; p.sends <= p.after {
		p.Producer.Send(ctx, m)
		return
	}
	<-ctx.Done()
	p.ack(m, ctx.Err())
}

// TestSendsBlockedAfterTheStopAreGivenUp: a broker that takes no more
// messages holds a producer in Send past the stop; after DrainTimeout the
// send is given up, fails, and the run ends saying why.
func TestSendsBlockedAfterTheStopAreGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &workload.Workload{Name: "blocked", Topics: 1, PartitionsPerTopic: 1, MessageSize: 100, ProducersPerTopic: 1,
			SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1, ProducerRate: 100, Duration: 2 * time.Second}
		d := &blockingDriver{Driver: memory.NewBroker().NewDriver(), after: 50}
		start := time.Now()
		res, _ := Run(context.Background(), Config{Workload: w, Driver: d, DrainTimeout: 5 * time.Second})
		if res == nil {
			t.Fatal("no results")
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("the run took %s", took)
		}
		c := res.Counts
		if c.Acked != 50 || c.Failed != 1 || c.Sent != 51 || c.Lost != 0 {
			t.Errorf("counts %+v: want 50 acknowledged, the blocked send failed, none lost", c)
		}
		if !slices.ContainsFunc(res.Warnings, func(s string) bool { return strings.Contains(s, "still blocked in a send 5s after they stopped") }) {
			t.Errorf("warnings %q do not say the sends were given up", res.Warnings)
		}
	})
}
