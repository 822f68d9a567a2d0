package runner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// transactions is one producer's transactions: it opens one before the
// first message, ends it after Size messages or CommitInterval, commits
// or aborts it as the workload's seed says, and keeps which sequence
// numbers were aborted or left undecided, for the accounting. Its fields
// are written by the producer goroutine; the counters and sets are read
// by others.
type transactions struct {
	tx       driver.Transactor
	size     int
	interval int64 // ns; 0: no time bound
	aborts   func(n uint64) bool
	ended    uint64 // transactions ended so far

	open     bool
	first    uint64 // sequence number of the open transaction's first message
	count    int    // its messages so far
	openedAt int64  // clock ns
	failedAt int64  // the producer's failed count when it opened

	// commits records the time End took for each commit, on the
	// producer goroutine alone.
	commits *metrics.Histogram
	// committed, aborted and undecided count ended transactions;
	// withdrawn counts the acknowledged messages of the aborted and
	// undecided ones, which no subscription is due.
	committed, aborted, undecided, withdrawn atomic.Int64

	mu sync.Mutex // guards what follows
	// abortedSeqs and undecidedSeqs hold the messages of aborted
	// transactions, and of those whose end failed.
	abortedSeqs, undecidedSeqs accounting.SeqSet
	// errs counts the errors of ending transactions, by text.
	errs map[string]int64
}

func newTransactions(t *workload.Transactions, seed uint64, producer uint32, tx driver.Transactor) *transactions {
	return &transactions{tx: tx, size: t.Size, interval: int64(t.CommitInterval), aborts: t.Aborts(seed, producer),
		commits: metrics.NewHistogram(), errs: map[string]int64{}}
}

// deadline is the clock time at which the open transaction must end; the
// largest int64 when there is no time bound.
func (t *transactions) deadline() int64 {
	if !t.open || t.interval == 0 {
		return 1<<63 - 1
	}
	return t.openedAt + t.interval
}

// beforeSend opens a transaction for message seq if none is open, ending
// first one that has been open for its whole interval. It returns false
// if a transaction cannot be opened: the producer must stop.
func (w *producerWorker) beforeSend(ctx context.Context, seq uint64, now int64) bool {
	t := w.txn
	if t.open && now >= t.deadline() {
		w.endTransaction(ctx)
	}
	if t.open {
		return true
	}
	if err := t.tx.Begin(); err != nil {
		t.noteError("begin: " + err.Error())
		return false
	}
	t.open, t.first, t.count, t.openedAt, t.failedAt = true, seq, 0, now, w.stats.failed.Load()
	return true
}

// afterSend counts a message sent in the open transaction and ends it
// once it is full.
func (w *producerWorker) afterSend(ctx context.Context) {
	t := w.txn
	t.count++
	if t.count >= t.size {
		w.endTransaction(ctx)
	}
}

// endTransaction waits for the open transaction's acknowledgements, then
// commits or aborts it. A commit's time is its commit latency. A failed
// wait or end leaves the transaction undecided: its messages are neither
// expected nor forbidden.
func (w *producerWorker) endTransaction(ctx context.Context) {
	t := w.txn
	if !t.open {
		return
	}
	t.open = false
	if t.count == 0 { // opened just before the producer stopped
		_ = t.tx.End(ctx, false)
		return
	}
	commit := !t.aborts(t.ended)
	t.ended++
	w.publishSent()
	err := w.prod.Flush(ctx)
	if err != nil {
		err = fmt.Errorf("flush: %w", err)
	}
	began := clock.Now()
	if err == nil {
		err = t.tx.End(ctx, commit)
	} else {
		_ = t.tx.End(ctx, false) // not to leave it open; its outcome stays unknown
	}
	took := clock.Now() - began
	acked := int64(t.count) - (w.stats.failed.Load() - t.failedAt)
	switch {
	case err != nil:
		t.noteError(err.Error())
		t.undecided.Add(1)
		t.withdraw(&t.undecidedSeqs, t.first, t.count, acked)
	case commit:
		t.committed.Add(1)
		if w.record {
			t.commits.RecordNanos(took)
		}
	default:
		t.aborted.Add(1)
		t.withdraw(&t.abortedSeqs, t.first, t.count, acked)
	}
}

// withdraw adds the count messages from first to set and their acked
// ones to withdrawn.
func (t *transactions) withdraw(set *accounting.SeqSet, first uint64, count int, acked int64) {
	t.mu.Lock()
	for seq := first; seq < first+uint64(count); seq++ {
		set.Add(seq)
	}
	t.mu.Unlock()
	t.withdrawn.Add(acked)
}

func (t *transactions) noteError(text string) {
	t.mu.Lock()
	t.errs[text]++
	t.mu.Unlock()
}

// addOutcome adds the aborted and undecided messages to o.
func (t *transactions) addOutcome(o *accounting.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o.Aborted = &accounting.SeqSet{}
	t.abortedSeqs.CopyInto(o.Aborted)
	o.Pending.Union(&t.undecidedSeqs)
}

// transactionCounts sums the producers' transactions, and the warnings
// their errors give; nil counts for a run without transactions.
func (r *run) transactionCounts() (*results.TransactionCounts, []string) {
	if !r.w.Transactional() {
		return nil, nil
	}
	tc := &results.TransactionCounts{}
	var warnings []string
	for _, p := range r.producers {
		t := p.txn
		tc.Committed += t.committed.Load()
		tc.Aborted += t.aborted.Load()
		tc.Undecided += t.undecided.Load()
		t.mu.Lock()
		tc.AbortedMessages += int64(t.abortedSeqs.Len())
		for text, n := range t.errs {
			warnings = append(warnings, fmt.Sprintf("producer %d: %d transactions failed: %s", p.id, n, text))
		}
		t.mu.Unlock()
	}
	return tc, warnings
}

// withdrawn is the number of acknowledged messages in the producers'
// aborted and undecided transactions: no subscription is due them.
func (r *run) withdrawn() int64 {
	var n int64
	for _, p := range r.producers {
		if p.txn != nil {
			n += p.txn.withdrawn.Load()
		}
	}
	return n
}
