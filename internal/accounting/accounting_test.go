package accounting

import (
	"math/rand/v2"
	"testing"
)

// TestSeqSetMatchesModel checks Add, Contains, Len and countAbove against a
// map, across block boundaries and through the full-block compaction.
func TestSeqSetMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s SeqSet
	model := map[uint64]bool{}
	const n = 3*blockBits + 100
	// Fill block 1 completely (it must compact), then random numbers.
	for seq := uint64(blockBits); seq < 2*blockBits; seq++ {
		if s.Add(seq) {
			t.Fatalf("Add(%d) on first insert reported present", seq)
		}
		model[seq] = true
	}
	if s.partial[1] != nil || !s.isFull(1) {
		t.Fatalf("block 1 is full but not compacted")
	}
	for range 5000 {
		seq := rng.Uint64N(n)
		if got := s.Add(seq); got != model[seq] {
			t.Fatalf("Add(%d) = %v, model says present=%v", seq, got, model[seq])
		}
		model[seq] = true
	}
	if s.Len() != uint64(len(model)) {
		t.Fatalf("Len = %d, want %d", s.Len(), len(model))
	}
	for seq := uint64(0); seq < n+blockBits; seq++ {
		if s.Contains(seq) != model[seq] {
			t.Fatalf("Contains(%d) = %v, want %v", seq, !model[seq], model[seq])
		}
	}
	var c SeqSet
	s.CopyInto(&c)
	s.Add(n + 1)
	if c.Contains(n+1) || c.Len() != uint64(len(model)) {
		t.Fatalf("CopyInto: the copy changed with the original")
	}
	model[n+1] = true
	for _, cut := range []uint64{0, 1, 63, 64, blockBits - 1, blockBits, blockBits + 5, 2 * blockBits, n, n + 10} {
		var want uint64
		for seq := range model {
			if seq >= cut {
				want++
			}
		}
		if got := s.countAbove(cut); got != want {
			t.Errorf("countAbove(%d) = %d, want %d", cut, got, want)
		}
	}
}

func setOf(seqs ...uint64) *SeqSet {
	s := &SeqSet{}
	for _, q := range seqs {
		s.Add(q)
	}
	return s
}

func TestReconcile(t *testing.T) {
	sub := NewSubscription(2)
	// Producer 0 sent 10000: 5 and 9000 never delivered (lost), 7 failed
	// and not delivered, 8 failed but delivered, 9 pending, 100 delivered
	// twice.
	for seq := uint64(0); seq < 10000; seq++ {
		switch seq {
		case 5, 9000, 7, 9:
			continue
		}
		if v := sub.Record(0, seq); v != First {
			t.Fatalf("Record(0, %d) = %v, want First", seq, v)
		}
	}
	if v := sub.Record(0, 100); v != Duplicate {
		t.Fatalf("second Record(0, 100) = %v, want Duplicate", v)
	}
	// Producer 1 sent 3, all delivered, plus one number it never sent.
	for seq := uint64(0); seq < 3; seq++ {
		sub.Record(1, seq)
	}
	sub.Record(1, 50)
	if v := sub.Record(7, 0); v != Unknown {
		t.Fatalf("Record from producer 7 of 2 = %v, want Unknown", v)
	}
	got := sub.Reconcile([]Outcome{
		{Sent: 10000, Failed: setOf(7, 8), Pending: setOf(9)},
		{Sent: 3},
	})
	want := Result{Expected: 10000 - 3 + 3, Delivered: 9996 + 3, Lost: 2, Duplicated: 1, FailedDelivered: 1, Unexpected: 2}
	if got != want {
		t.Fatalf("Reconcile = %+v\nwant        %+v", got, want)
	}
}

func TestReconcileNothingDelivered(t *testing.T) {
	sub := NewSubscription(1)
	got := sub.Reconcile([]Outcome{{Sent: 2*blockBits + 1}})
	if got.Lost != 2*blockBits+1 || got.Expected != got.Lost || got.Delivered != 0 {
		t.Fatalf("Reconcile with no deliveries = %+v, want all %d lost", got, 2*blockBits+1)
	}
}

func TestOrder(t *testing.T) {
	var o Order
	steps := []struct {
		lane     int32
		producer uint32
		seq      uint64
		late     bool
	}{
		{0, 0, 0, false},
		{0, 0, 2, false},
		{0, 0, 1, true},  // after 2 in the same lane
		{1, 0, 1, false}, // other lane: its own order
		{0, 1, 0, false}, // other producer
		{0, 0, 3, false},
		{-1, 0, 5, false}, // no order promised: not checked
		{-1, 0, 4, false},
	}
	for i, s := range steps {
		if got := o.Observe(s.lane, s.producer, s.seq); got != s.late {
			t.Fatalf("step %d Observe(%d,%d,%d) = %v, want %v", i, s.lane, s.producer, s.seq, got, s.late)
		}
	}
}

// BenchmarkRecord is the consume-side accounting cost per message, in order
// as a single consumer sees it.
func BenchmarkRecord(b *testing.B) {
	sub := NewSubscription(1)
	var o Order
	b.ReportAllocs()
	for i := range b.N {
		if sub.Record(0, uint64(i)) == First {
			o.Observe(int32(i%6), 0, uint64(i))
		}
	}
}

// TestDistinctCountsFirstDeliveries: redeliveries and unknown producers do
// not count as distinct messages.
func TestDistinctCountsFirstDeliveries(t *testing.T) {
	s := NewSubscription(2)
	for _, d := range []struct {
		p   uint32
		seq uint64
	}{{0, 1}, {0, 1}, {1, 1}, {0, 2}, {1, 1}, {7, 1}} {
		s.Record(d.p, d.seq)
	}
	if s.Distinct() != 3 {
		t.Errorf("distinct %d, want 3", s.Distinct())
	}
}

// TestReconcileUnknownOutcome: the deliveries of a producer whose outcome
// is unknown are delivered, never expected, lost or unexpected.
func TestReconcileUnknownOutcome(t *testing.T) {
	s := NewSubscription(2)
	for _, seq := range []uint64{0, 1, 5, 900} {
		s.Record(1, seq)
	}
	s.Record(0, 0)
	got := s.Reconcile([]Outcome{{Sent: 3}, {Unknown: true}})
	want := Result{Expected: 3, Delivered: 5, Lost: 2}
	if got != want {
		t.Fatalf("Reconcile = %+v, want %+v", got, want)
	}
}

// TestReconcileFound: a missing acknowledged message that a read of the
// broker found is late, not lost; Found ignores messages already
// received, found twice, or from an unknown producer.
func TestReconcileFound(t *testing.T) {
	s := NewSubscription(2)
	for seq := uint64(0); seq < 10; seq++ {
		switch seq {
		case 3, 4, 7:
			continue // 3 and 4 missing, 7 failed and missing
		}
		s.Record(0, seq)
	}
	for _, f := range []struct {
		p       uint32
		seq     uint64
		missing bool
	}{
		{0, 3, true},  // missing: found
		{0, 3, false}, // found before
		{0, 5, false}, // received
		{0, 7, true},  // failed, never received: found, but not expected
		{9, 1, false}, // not a producer of the run
	} {
		if got := s.Found(f.p, f.seq); got != f.missing {
			t.Errorf("Found(%d, %d) = %v, want %v", f.p, f.seq, got, f.missing)
		}
	}
	outcomes := []Outcome{{Sent: 10, Failed: setOf(7)}, {}}
	got := s.Reconcile(outcomes)
	want := Result{Expected: 9, Delivered: 7, Lost: 1, Late: 1}
	if got != want {
		t.Fatalf("Reconcile = %+v, want %+v", got, want)
	}
	for seq, ack := range []bool{true, true, true, true, true, true, true, false, true, true, false} {
		if outcomes[0].Acknowledged(uint64(seq)) != ack {
			t.Errorf("Acknowledged(%d) = %v, want %v", seq, !ack, ack)
		}
	}
	if (Outcome{Sent: 5, Unknown: true}).Acknowledged(1) || (Outcome{Sent: 5, Pending: setOf(2)}).Acknowledged(2) {
		t.Error("an unknown or pending outcome is not an acknowledgement")
	}
}

// TestReconcileAborted: the messages of aborted transactions are neither
// expected nor lost, and one that is delivered all the same is an
// aborted read, whichever block it falls in.
func TestReconcileAborted(t *testing.T) {
	const sent = 2*blockBits + 10
	aborted := &SeqSet{}
	for seq := uint64(blockBits - 5); seq < blockBits+5; seq++ { // one transaction across a block boundary
		aborted.Add(seq)
	}
	outcomes := []Outcome{{Sent: sent, Aborted: aborted}}
	clean := NewSubscription(1)
	for seq := range uint64(sent) {
		if !aborted.Contains(seq) {
			clean.Record(0, seq)
		}
	}
	want := Result{Expected: sent - 10, Delivered: sent - 10}
	if got := clean.Reconcile(outcomes); got != want {
		t.Fatalf("committed messages only: Reconcile = %+v, want %+v", got, want)
	}
	// A read-committed consumer that received two aborted messages, one
	// each side of the boundary.
	leaky := NewSubscription(1)
	for seq := range uint64(sent) {
		if !aborted.Contains(seq) || seq == blockBits-1 || seq == blockBits+2 {
			leaky.Record(0, seq)
		}
	}
	want = Result{Expected: sent - 10, Delivered: sent - 8, AbortedRead: 2}
	if got := leaky.Reconcile(outcomes); got != want {
		t.Fatalf("aborted messages delivered: Reconcile = %+v, want %+v", got, want)
	}
	if outcomes[0].Acknowledged(blockBits) || !outcomes[0].Acknowledged(blockBits+5) {
		t.Error("an aborted message is not due to the subscriptions; the next one is")
	}
}
