package runner

// A claimed loss must be proven: a subscription that misses acknowledged
// messages after the drain has the broker read again, and only what the
// broker no longer holds is lost. The reference broker under
// testing/synctest, with wrappers that make a consumer miss a delivery
// or a producer drop a message it acknowledges.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
)

// missedSeq is the message (of producer 0) the wrappers below lose.
const missedSeq = 100

// rereadWorkload is a short fixed-rate run of 2000 messages.
func rereadWorkload() *Config {
	w := baseWorkload()
	w.PartitionsPerTopic = 2
	w.ProducerRate, w.MessageLimit = 1000, 2000
	w.Warmup, w.Duration = 0, 10*time.Second
	return &Config{Workload: w}
}

// missingConsumer wraps the reference broker so that a consumer misses
// the delivery of missedSeq (the broker delivered it; the client lost
// it) and the producer sees message failedSeq fail although the broker
// stored it. It counts nothing the broker stores (no WrittenCounter, as
// for a RabbitMQ queue), so the failed-but-delivered message lets the
// drain end with missedSeq missing: the miscount a re-read must correct.
type missingConsumer struct {
	*memory.Driver
}

const failedSeq = 50

// Written shadows the reference broker's count (driver.WrittenCounter):
// this broker cannot say.
func (m *missingConsumer) Written() {}

func (m *missingConsumer) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	return m.Driver.NewConsumer(ctx, spec, func(d *driver.Delivery) {
		if h, err := payload.Parse(d.Value); err == nil && h.ProducerID == 0 && h.Seq == missedSeq {
			return
		}
		consume(d)
	})
}

func (m *missingConsumer) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	return m.Driver.NewProducer(ctx, spec, func(msg *driver.Message, err error) {
		if h, perr := payload.Parse(msg.Value); perr == nil && h.Seq == failedSeq && err == nil {
			err = errors.New("timed out after the broker stored it")
		}
		ack(msg, err)
	})
}

// droppingProducer wraps the reference broker so that its producers
// acknowledge missedSeq without sending it: a broker that loses a
// message it acknowledged. The broker's count lacks it, so the drain
// ends with it missing.
type droppingProducer struct {
	*memory.Driver
	mu sync.Mutex // acknowledgements of one producer are never concurrent
}

func (d *droppingProducer) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	locked := func(m *driver.Message, err error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		ack(m, err)
	}
	p, err := d.Driver.NewProducer(ctx, spec, locked)
	return &dropOne{Producer: p, ack: locked}, err
}

type dropOne struct {
	driver.Producer
	ack driver.AckFunc
}

func (p *dropOne) Send(ctx context.Context, m *driver.Message) {
	if h, err := payload.Parse(m.Value); err == nil && h.Seq == missedSeq {
		p.ack(m, nil)
		return
	}
	p.Producer.Send(ctx, m)
}

// cannotReread is droppingProducer behind a driver that cannot read the
// broker again.
type cannotReread struct {
	driver.Driver
	written driver.WrittenCounter
}

func (c *cannotReread) Written(ctx context.Context, topic string) (int64, error) {
	return c.written.Written(ctx, topic)
}

func TestReread(t *testing.T) {
	cases := []struct {
		name string
		wrap func(*memory.Driver) driver.Driver
		// want: the subscription's lost, unconfirmed and late counts,
		// whether the re-read was complete, and the verdict.
		lost, unconfirmed, late int64
		complete                bool
		verdict                 results.VerdictKind
		reason                  string
	}{
		// The consumer missed a message the broker still holds: found
		// on the re-read, delivered late, and the run is sound.
		{"missed delivery found", func(d *memory.Driver) driver.Driver { return &missingConsumer{Driver: d} },
			0, 0, 1, true, results.OK, ""},
		// The broker acknowledged a message it never stored: the
		// complete re-read proves it lost.
		{"broker dropped it", func(d *memory.Driver) driver.Driver { return &droppingProducer{Driver: d} },
			1, 0, 0, true, results.AccountingMismatch, "1 acknowledged messages were lost"},
		// The same loss through a driver that cannot read the broker
		// again: not proven, so an unconfirmed loss, and the verdict
		// says so.
		{"cannot re-read", func(d *memory.Driver) driver.Driver {
			return &cannotReread{Driver: &droppingProducer{Driver: d}, written: d}
		}, 0, 1, 0, false, results.AccountingMismatch, "unconfirmed loss: 1 acknowledged messages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := memory.NewBroker().NewDriver().(*memory.Driver)
				cfg := rereadWorkload()
				cfg.Driver = tc.wrap(inner)
				res, err := Run(context.Background(), *cfg)
				if err != nil {
					t.Fatal(err)
				}
				c := res.Counts
				if len(c.Subscriptions) != 1 {
					t.Fatalf("subscriptions %+v", c.Subscriptions)
				}
				s := c.Subscriptions[0]
				if c.Lost != tc.lost || c.UnconfirmedLoss != tc.unconfirmed || c.DeliveredLate != tc.late ||
					s.Lost != tc.lost || s.UnconfirmedLoss != tc.unconfirmed || s.DeliveredLate != tc.late || c.Undelivered != 0 {
					t.Errorf("lost %d, unconfirmed %d, late %d, undelivered %d (subscription %+v); want %d, %d, %d, 0",
						c.Lost, c.UnconfirmedLoss, c.DeliveredLate, c.Undelivered, s, tc.lost, tc.unconfirmed, tc.late)
				}
				rr := s.Reread
				if rr == nil || rr.Missing != 1 || rr.Found != tc.late || rr.Complete != tc.complete || (rr.Error == "") != tc.complete {
					t.Errorf("re-read evidence %+v: want 1 missing, %d found, complete %v", rr, tc.late, tc.complete)
				}
				if tc.lost > 0 && rr != nil && rr.Read != c.Acked-tc.lost {
					// A proof reads every message the broker stores.
					t.Errorf("re-read read %d messages; the broker stores %d", rr.Read, c.Acked-tc.lost)
				}
				if tc.late > 0 && rr != nil && rr.Read > missedSeq {
					// A re-read that found every missing message stops:
					// the log is read in order from missedSeq's partition
					// (every other message of producer 0).
					t.Errorf("re-read read %d messages; it could stop once it found message %d", rr.Read, missedSeq)
				}
				v := results.Judge(res)
				if v.Kind != tc.verdict || !strings.Contains(v.Reason, tc.reason) {
					t.Errorf("verdict %s: %q; want %s containing %q", v.Kind, v.Reason, tc.verdict, tc.reason)
				}
				var out strings.Builder
				results.PrintSummary(&out, res)
				if !strings.Contains(out.String(), "re-read of "+s.Name) {
					t.Errorf("the summary does not give the re-read's evidence:\n%s", out.String())
				}
			})
		})
	}
}

// TestRereadWithoutLossReadsNothing: a run that misses nothing does not
// read the broker again and gives no evidence.
func TestRereadWithoutLossReadsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := rereadWorkload()
		d := &countingRereader{Driver: memory.NewBroker().NewDriver().(*memory.Driver)}
		cfg.Driver = d
		res, err := Run(context.Background(), *cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.calls != 0 || res.Counts.Subscriptions[0].Reread != nil || res.Counts.Lost+res.Counts.UnconfirmedLoss != 0 {
			t.Errorf("%d re-reads, evidence %+v", d.calls, res.Counts.Subscriptions[0].Reread)
		}
	})
}

type countingRereader struct {
	*memory.Driver
	calls int
}

func (c *countingRereader) Reread(ctx context.Context, topic, sub string, found func([]byte)) error {
	c.calls++
	return c.Driver.Reread(ctx, topic, sub, found)
}
