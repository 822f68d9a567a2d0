package workload

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Transactions are the transactional producers' settings: each producer
// sends its messages in transactions of Size messages, aborts a seeded
// share of them, and ends a transaction after CommitInterval even if it
// is not full. Consumers then read only committed messages. brokerbench's
// own format only; the driver must declare the capability.
type Transactions struct {
	// Size is the number of messages per transaction (workload field
	// transactionSize).
	Size int `json:"size"`
	// AbortRate is the share of transactions aborted rather than
	// committed, 0 to 1 (transactionAbortRate). Which ones is decided by
	// the workload's seed (Aborts), so that a run is repeatable.
	AbortRate float64 `json:"abortRate,omitempty"`
	// CommitInterval, when not 0, is the longest a transaction stays
	// open: one that has not reached Size by then ends with fewer
	// messages (transactionCommitInterval).
	CommitInterval time.Duration `json:"commitIntervalNs,omitempty"`
}

// MaxTransactionSize bounds transactionSize.
const MaxTransactionSize = 1_000_000

// Transactional reports whether the workload's producers send in
// transactions.
func (w *Workload) Transactional() bool { return w.Transactions != nil }

// Aborts says, for the producer with the given id, which of its
// transactions end in an abort: the n-th (from 0) does when
// Aborts(producer)(n) is true. The choice is a hash of the seed, the
// producer and n against AbortRate, so the same workload aborts the same
// transactions on every run. It is safe for concurrent use.
func (t *Transactions) Aborts(seed uint64, producer uint32) func(n uint64) bool {
	if t.AbortRate <= 0 {
		return func(uint64) bool { return false }
	}
	threshold := uint64(t.AbortRate * (1 << 53))
	return func(n uint64) bool {
		return mix(seed^uint64(producer)<<32^n*0x9e3779b97f4a7c15)>>11 < threshold
	}
}

// mix is SplitMix64's finaliser: a bijection of 64 bits whose outputs
// look independent for consecutive inputs.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// inTransactions decodes one of the transaction fields with the setter
// field returns for a Transactions: a copy of *dst's, or a new one, which
// replaces *dst if the value is valid. Workloads copied for a study's
// sweep thus never share one.
func inTransactions(dst **Transactions, field func(t *Transactions) fieldSetter) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		t := &Transactions{}
		if *dst != nil {
			*t = **dst
		}
		before := len(d.errs)
		field(t)(d, key, v)
		if len(d.errs) == before {
			*dst = t
		}
	}
}

// validateTransactions checks the transaction fields against each other
// and against the rest of the workload.
func (w *Workload) validateTransactions(bad func(field, format string, args ...any)) {
	t := w.Transactions
	if t == nil {
		return
	}
	if t.Size == 0 {
		bad("transactionSize", "missing: transactionAbortRate and transactionCommitInterval apply to transactions of transactionSize messages")
	}
	if t.AbortRate == 1 && w.Consumers() > 0 {
		bad("transactionAbortRate", "1 aborts every transaction: the consumers would read nothing; use less than 1")
	}
}
