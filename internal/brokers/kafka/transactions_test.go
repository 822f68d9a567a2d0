package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestTransactionsReadCommitted runs transactional producers with aborts
// against the test broker, consumers reading committed messages only:
// every message of a committed transaction is consumed exactly once, and
// none of an aborted one. How fast the machine lets it go is not under
// test: a missed rate, a disturbed or busy machine are accepted.
func TestTransactionsReadCommitted(t *testing.T) {
	d := newDriver(t)
	w := &workload.Workload{
		Name: "transactions", Topics: 1, PartitionsPerTopic: 3, MessageSize: 100, PayloadRandomRatio: 1, PayloadPoolSize: 10,
		KeyDistributor: payload.NoKey, ProducersPerTopic: 2, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1,
		ProducerRate: 1000, Duration: 3 * time.Second, Seed: 7,
		Transactions: &workload.Transactions{Size: 20, AbortRate: 0.3, CommitInterval: 100 * time.Millisecond},
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), runner.Config{Workload: w, Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	c, tx := res.Counts, res.Counts.Transactions
	if tx == nil || tx.Committed == 0 || tx.Aborted == 0 || tx.AbortedMessages == 0 {
		t.Fatalf("transactions %+v: want some committed and some aborted", tx)
	}
	if tx.Undecided != 0 {
		t.Logf("%d transactions undecided on this machine (%v): their messages are left out of the check", tx.Undecided, res.Warnings)
	}
	if c.AbortedRead != 0 {
		t.Errorf("%d messages of aborted transactions reached read-committed consumers", c.AbortedRead)
	}
	sub := c.Subscriptions[0]
	if c.Lost != 0 || c.UnconfirmedLoss != 0 || c.Undelivered != 0 || c.Duplicated != 0 || sub.Delivered != sub.Expected || sub.Expected == 0 {
		t.Errorf("accounting %+v, subscription %+v: every committed message consumed exactly once", c, sub)
	}
	t.Logf("transactions %+v; published %.0f msg/s; commit latency %+v", tx, res.Measured.PublishRate, res.Measured.CommitLatency)
	if m := res.Measured.CommitLatency; m == nil || m.Count == 0 || m.P50 <= 0 {
		t.Errorf("commit latency %+v", m)
	}
	if v := results.Judge(res); v.Kind == results.AccountingMismatch || v.Kind == results.Failed {
		t.Errorf("verdict %+v", v)
	}
}

// TestTransactionsNeedIdempotence: a transactional producer without the
// idempotent producer (acks=1) is refused as an input error, before any
// connection.
func TestTransactionsNeedIdempotence(t *testing.T) {
	d, err := New(&workload.DriverConfig{Name: "kafka", Source: "test", Producer: workload.Properties{{Key: "acks", Value: "1"}}},
		driver.Options{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.NewProducer(context.Background(), driver.ProducerSpec{Topic: "t", MaxMessageBytes: 100, MaxInFlight: 10, Transactional: true}, func(*driver.Message, error) {})
	if !errors.Is(err, workload.ErrInvalid) {
		t.Fatalf("error %v: want an input error naming acks=all", err)
	}
}
