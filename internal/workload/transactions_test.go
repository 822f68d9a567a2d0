package workload

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestTransactionFields: the three fields are read into one Transactions;
// a study's sweep sets them on a copy without touching the original.
func TestTransactionFields(t *testing.T) {
	w, err := Parse("t.yaml", []byte(trafficBase+"transactionSize: 100\ntransactionAbortRate: 0.1\ntransactionCommitInterval: 50ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tx := w.Transactions; !w.Transactional() || *tx != (Transactions{Size: 100, AbortRate: 0.1, CommitInterval: 50 * time.Millisecond}) {
		t.Fatalf("transactions %+v", tx)
	}
	swept := *w
	if err := swept.SetField("s.yaml", 3, "transactionSize", "1000"); err != nil {
		t.Fatal(err)
	}
	if swept.Transactions.Size != 1000 || w.Transactions.Size != 100 {
		t.Errorf("swept size %d, original %d: the sweep must change its copy only", swept.Transactions.Size, w.Transactions.Size)
	}
	plain, err := Parse("t.yaml", []byte(trafficBase))
	if err != nil || plain.Transactional() {
		t.Errorf("a workload without the fields has transactions %+v (%v)", plain.Transactions, err)
	}
}

// TestTransactionErrors: each mistake names its field.
func TestTransactionErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"transactionSize: 0\n", `field "transactionSize": must be between 1 and 1000000`},
		{"transactionAbortRate: 0.1\n", `field "transactionSize": missing`},
		{"transactionSize: 10\ntransactionAbortRate: 1.5\n", `field "transactionAbortRate": must be between 0 and 1`},
		{"transactionSize: 10\ntransactionAbortRate: 1\n", "the consumers would read nothing"},
		{"transactionSize: 10\ntransactionCommitInterval: 10us\n", "must be at least 1ms"},
	} {
		_, err := Parse("t.yaml", []byte(trafficBase+c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.yaml, err, c.want)
		}
	}
}

// TestAborts: the seed decides which transactions abort, the same way
// every time, at the rate asked, differently for each producer.
func TestAborts(t *testing.T) {
	tx := &Transactions{Size: 10, AbortRate: 0.1}
	a, again, other := tx.Aborts(1, 0), tx.Aborts(1, 0), tx.Aborts(1, 1)
	const n = 100_000
	aborted, differ := 0, 0
	for i := range uint64(n) {
		if a(i) != again(i) {
			t.Fatalf("transaction %d: two calls disagree", i)
		}
		if a(i) {
			aborted++
		}
		if a(i) != other(i) {
			differ++
		}
	}
	if math.Abs(float64(aborted)/n-0.1) > 0.005 {
		t.Errorf("%d of %d aborted, want about 10%%", aborted, n)
	}
	if differ < n/10 {
		t.Errorf("producers 0 and 1 differ on %d of %d transactions: each producer needs its own choices", differ, n)
	}
	if (&Transactions{Size: 10}).Aborts(1, 0)(3) {
		t.Error("an abort rate of 0 aborted a transaction")
	}
}
