package runner

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// txDriver gives the memory broker transactions of a kind: its producers
// take each message into the open transaction (acknowledging it at once)
// and write a transaction's messages to the broker when it commits. With
// leak set, they write every message at once instead, aborted ones
// included: consumers then read what an abort should have hidden.
type txDriver struct {
	driver.Driver
	leak bool
}

func (d *txDriver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	if !spec.Transactional {
		return nil, context.Canceled
	}
	inner, err := d.Driver.NewProducer(ctx, spec, func(*driver.Message, error) {})
	if err != nil {
		return nil, err
	}
	return &txProducer{Producer: inner, ack: ack, leak: d.leak}, nil
}

type txProducer struct {
	driver.Producer
	ack  driver.AckFunc
	leak bool
	open []*driver.Message // copies of the open transaction's messages
}

var _ driver.Transactor = (*txProducer)(nil)

func (p *txProducer) Send(ctx context.Context, m *driver.Message) {
	c := &driver.Message{Key: slices.Clone(m.Key), Value: slices.Clone(m.Value), Time: m.Time}
	p.open = append(p.open, c)
	if p.leak {
		p.Producer.Send(ctx, c)
	}
	p.ack(m, nil)
}

func (p *txProducer) Begin() error { return nil }

func (p *txProducer) End(ctx context.Context, commit bool) error {
	if commit && !p.leak {
		for _, m := range p.open {
			p.Producer.Send(ctx, m)
		}
	}
	p.open = nil
	return p.Producer.Flush(ctx)
}

// TestTransactionsAccounting: transactions of 50 messages, a quarter of
// them aborted as the seed says, or ended early by a commit interval.
// Consumers that receive only committed messages leave nothing lost and
// nothing read of an aborted transaction; consumers that receive the
// aborted ones too are caught: every such message is an aborted read,
// and the run's verdict is an accounting mismatch (exit code 5).
func TestTransactionsAccounting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		leak     bool
		interval time.Duration
		// ended is the number of transactions the 2000 messages make.
		ended int64
	}{
		{name: "read committed", ended: 40},
		{name: "aborted messages read", leak: true, ended: 40},
		// 1000 msg/s for 2 s with a transaction ended every 20 ms: 20
		// messages each.
		{name: "commit interval", interval: 20 * time.Millisecond, ended: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := baseWorkload()
				w.ProducerRate = 1000
				w.Warmup, w.Duration = 0, 2*time.Second
				w.Transactions = &workload.Transactions{Size: 50, AbortRate: 0.25, CommitInterval: tc.interval}
				d := &txDriver{Driver: memory.NewBroker().NewDriver(), leak: tc.leak}
				res, err := Run(context.Background(), Config{Workload: w, Driver: d})
				if err != nil {
					t.Fatal(err)
				}
				c, tx := res.Counts, res.Counts.Transactions
				if tx == nil || tx.Committed+tx.Aborted != tc.ended || tx.Undecided != 0 {
					t.Fatalf("transactions %+v: want %d ended, none undecided", tx, tc.ended)
				}
				// The seed decides which transactions abort.
				aborts := w.Transactions.Aborts(w.Seed, 0)
				var want int64
				for n := range uint64(tc.ended) {
					if aborts(n) {
						want++
					}
				}
				if tx.Aborted != want || want == 0 || tx.AbortedMessages != c.Sent*want/tc.ended {
					t.Errorf("%d transactions aborted with %d messages, want the seed's %d of %d messages each", tx.Aborted, tx.AbortedMessages, want, c.Sent/tc.ended)
				}
				m := res.Measured
				// The last transaction ends as the producers stop, after
				// the measurement.
				if m.CommitLatency == nil || m.CommitLatency.Count < tx.Committed-1 || m.CommitLatency.Count > tx.Committed {
					t.Errorf("commit latency %+v: want one per transaction committed in the measurement (%d in all)", m.CommitLatency, tx.Committed)
				}
				if res.Histograms.CommitLatency == "" {
					t.Error("the commit latency histogram is not encoded")
				}
				if c.Lost != 0 || c.UnconfirmedLoss != 0 || c.Undelivered != 0 || c.Duplicated != 0 || c.StoredByBroker != nil {
					t.Errorf("accounting %+v: aborted messages are neither lost nor expected, and the broker's count, markers included, is not compared", c)
				}
				sub := c.Subscriptions[0]
				if sub.Expected != c.Acked-tx.AbortedMessages {
					t.Errorf("expected %d, want the %d acknowledged less the %d aborted", sub.Expected, c.Acked, tx.AbortedMessages)
				}
				v := results.Judge(res)
				if tc.leak {
					if c.AbortedRead != tx.AbortedMessages || v.Kind != results.AccountingMismatch {
						t.Errorf("aborted read %d of %d aborted messages, verdict %+v: want every one caught, and an accounting mismatch", c.AbortedRead, tx.AbortedMessages, v)
					}
					return
				}
				if c.AbortedRead != 0 || sub.Delivered != sub.Expected || v.Kind != results.OK {
					t.Errorf("aborted read %d, delivered %d of %d, verdict %+v", c.AbortedRead, sub.Delivered, sub.Expected, v)
				}
			})
		})
	}
}
