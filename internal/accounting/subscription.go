package accounting

import (
	"math/bits"
	"sync"
)

// Subscription records the messages delivered to one subscription (all its
// consumers). It is safe for concurrent use by those consumers.
type Subscription struct {
	mu         sync.Mutex
	seen       []SeqSet // by producer id
	distinct   int64
	duplicated int64
	unknown    int64
	// late holds, by producer, the messages a re-read of the broker
	// found that no consumer had received (see Found).
	late []SeqSet
}

// Distinct returns how many different messages of the run's producers were
// delivered: redeliveries count once.
func (s *Subscription) Distinct() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.distinct
}

// NewSubscription returns a record for a run with the given number of
// producers, whose ids are 0 to producers-1.
func NewSubscription(producers int) *Subscription {
	return &Subscription{seen: make([]SeqSet, producers)}
}

// Verdict classifies one delivery.
type Verdict int

// Verdicts of Record.
const (
	First     Verdict = iota // the message's first delivery
	Duplicate                // delivered before
	Unknown                  // the producer id is not one of the run's
)

// Record notes one delivery of message seq from producer.
func (s *Subscription) Record(producer uint32, seq uint64) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(producer) >= len(s.seen) {
		s.unknown++
		return Unknown
	}
	if s.seen[producer].Add(seq) {
		s.duplicated++
		return Duplicate
	}
	s.distinct++
	return First
}

// Found notes that a read of the broker after the run found message seq
// of producer still there although no consumer of the subscription had
// received it: the message is late, not lost (Result.Late). It reports
// whether the message was missing until now: false if it was received
// or found before, or its producer is not one of the run's.
func (s *Subscription) Found(producer uint32, seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(producer) >= len(s.seen) || s.seen[producer].Contains(seq) {
		return false
	}
	for len(s.late) < len(s.seen) {
		s.late = append(s.late, SeqSet{})
	}
	return !s.late[producer].Add(seq)
}

// Outcome is what one producer knows about its messages when the run ends.
type Outcome struct {
	// Sent is the number of messages attempted: sequence numbers [0, Sent).
	Sent uint64 `json:"sent"`
	// Failed holds the numbers the broker refused or that timed out.
	Failed *SeqSet `json:"failed,omitempty"`
	// Pending holds the numbers with no outcome yet: the run was cut
	// short, or the end of their transaction failed, which leaves unknown
	// whether it committed.
	Pending *SeqSet `json:"pending,omitempty"`
	// Aborted holds the numbers sent in transactions the producer
	// aborted: none may be delivered to a subscription that reads only
	// committed messages, and none is expected.
	Aborted *SeqSet `json:"aborted,omitempty"`
	// Unknown says the producer's outcome is unknown (the process that ran
	// it was lost): its deliveries count as delivered, none as expected,
	// lost or unexpected.
	Unknown bool `json:"unknown,omitempty"`
}

// Acknowledged reports whether the producer's message seq was
// acknowledged and is due to its subscriptions: sent, neither failed,
// pending nor aborted, and the outcome known.
func (o Outcome) Acknowledged(seq uint64) bool {
	in := func(s *SeqSet) bool { return s != nil && s.Contains(seq) }
	return !o.Unknown && seq < o.Sent && !in(o.Failed) && !in(o.Pending) && !in(o.Aborted)
}

// Result is one subscription's reconciliation.
type Result struct {
	// Expected is the number of acknowledged messages: each should be
	// delivered once.
	Expected uint64
	// Delivered counts distinct messages delivered (duplicates once).
	Delivered uint64
	// Lost counts acknowledged messages never delivered and not found
	// in the broker afterwards (Found).
	Lost uint64
	// Late counts acknowledged messages never delivered that a read of
	// the broker after the run found there (Found).
	Late uint64
	// Duplicated counts deliveries of a message already delivered.
	Duplicated int64
	// FailedDelivered counts messages reported as failed to the producer
	// that were delivered all the same (e.g. a timeout after the write).
	FailedDelivered uint64
	// Unexpected counts deliveries that no producer of this run sent:
	// unknown producer ids or sequence numbers at or beyond Sent.
	Unexpected uint64
	// AbortedRead counts messages of aborted transactions that were
	// delivered: a read-committed subscription must have none.
	AbortedRead uint64
}

// Reconcile compares the deliveries with the producers' outcomes, indexed
// by producer id. It must not run concurrently with Record.
func (s *Subscription) Reconcile(outcomes []Outcome) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Result{Duplicated: s.duplicated, Unexpected: uint64(s.unknown)}
	for p := range s.seen {
		seen := &s.seen[p]
		var o Outcome
		if p < len(outcomes) {
			o = outcomes[p]
		}
		late := &SeqSet{}
		if p < len(s.late) {
			late = &s.late[p]
		}
		failed, pending, aborted := orEmpty(o.Failed), orEmpty(o.Pending), orEmpty(o.Aborted)
		if o.Unknown {
			r.Delivered += seen.Len()
			continue
		}
		r.Unexpected += seen.countAbove(o.Sent)
		r.Delivered += seen.Len() - seen.countAbove(o.Sent)
		for b := uint64(0); b*blockBits < o.Sent; b++ {
			sw, fw, pw, lw, aw := seen.block(b), failed.block(b), pending.block(b), late.block(b), aborted.block(b)
			for w := range uint64(blockWords) {
				in := belowMask(b, w, o.Sent)
				unresolved := (fw[w] | pw[w] | aw[w]) & in
				missing := in &^ unresolved &^ sw[w]
				r.Expected += uint64(bits.OnesCount64(in &^ unresolved))
				r.Lost += uint64(bits.OnesCount64(missing &^ lw[w]))
				r.Late += uint64(bits.OnesCount64(missing & lw[w]))
				r.FailedDelivered += uint64(bits.OnesCount64(fw[w] & in & sw[w]))
				r.AbortedRead += uint64(bits.OnesCount64(aw[w] & in & sw[w]))
			}
		}
	}
	return r
}

// orEmpty returns s, or an empty set for nil.
func orEmpty(s *SeqSet) *SeqSet {
	if s == nil {
		return &SeqSet{}
	}
	return s
}

// Order detects reordering within lanes (the ordering scopes a driver
// names, such as Kafka's partitions) for one consumer: a message delivered
// for the first time after a later message of the same producer in the
// same lane. It is not safe for concurrent use; each consumer owns one.
type Order struct {
	last [][]uint64 // [lane][producer] = highest seq + 1 seen
}

// Observe notes a first delivery (verdict First) of seq from producer in
// lane and reports whether it arrived out of order. A negative lane means
// no order is promised: nothing is checked.
func (o *Order) Observe(lane int32, producer uint32, seq uint64) bool {
	if lane < 0 {
		return false
	}
	for len(o.last) <= int(lane) {
		o.last = append(o.last, nil)
	}
	row := o.last[lane]
	for len(row) <= int(producer) {
		row = append(row, 0)
	}
	o.last[lane] = row
	if seq+1 < row[producer] {
		return true
	}
	row[producer] = seq + 1
	return false
}
