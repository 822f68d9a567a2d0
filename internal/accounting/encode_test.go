package accounting

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomSet returns a set of about n numbers below limit, with a full
// block among them, and the same numbers as a map.
func randomSet(rng *rand.Rand, n int, limit uint64, fullBlock uint64) (*SeqSet, map[uint64]bool) {
	s, m := &SeqSet{}, map[uint64]bool{}
	for range n {
		v := rng.Uint64N(limit)
		s.Add(v)
		m[v] = true
	}
	for v := fullBlock * blockBits; v < (fullBlock+1)*blockBits; v++ {
		s.Add(v)
		m[v] = true
	}
	return s, m
}

func sameMembers(t *testing.T, s *SeqSet, m map[uint64]bool, limit uint64) {
	t.Helper()
	if s.Len() != uint64(len(m)) {
		t.Fatalf("Len = %d, want %d", s.Len(), len(m))
	}
	for v := range limit {
		if s.Contains(v) != m[v] {
			t.Fatalf("Contains(%d) = %v, want %v", v, !m[v], m[v])
		}
	}
}

func TestSeqSetEncodingRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const limit = 6 * blockBits
	for _, n := range []int{0, 1, 100, 20000} {
		s, m := randomSet(rng, n, limit, uint64(n%5))
		text, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back SeqSet
		if err := back.UnmarshalText(text); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		sameMembers(t, &back, m, limit+blockBits)
	}
}

func TestSeqSetDecodingRejectsCorruption(t *testing.T) {
	s, _ := randomSet(rand.New(rand.NewPCG(5, 6)), 500, 3*blockBits, 1)
	bin, _ := s.MarshalBinary()
	var back SeqSet
	// Cut short, one byte too many, and nothing at all.
	for name, data := range map[string][]byte{"truncated": bin[:len(bin)-3], "trailing": append(append([]byte{}, bin...), 0), "empty": nil} {
		if err := back.UnmarshalBinary(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A partial block listed twice: no full blocks, two partial blocks,
	// both block 0.
	var one SeqSet
	one.Add(5)
	b1, _ := one.MarshalBinary() // 0, 1, block 0, its words
	twice := append([]byte{0, 2}, b1[2:]...)
	twice = append(twice, b1[2:]...)
	if err := back.UnmarshalBinary(twice); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a block given twice: got %v", err)
	}
}

// TestUnionMatchesModel checks Union's members and its count of common
// members against maps, across full, partial and absent blocks.
func TestUnionMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const limit = 5 * blockBits
	for i := range 20 {
		a, ma := randomSet(rng, rng.IntN(9000), limit, uint64(i%5))
		b, mb := randomSet(rng, rng.IntN(9000), limit, uint64((i+i/5)%5))
		var want uint64
		for v := range mb {
			if ma[v] {
				want++
			}
			ma[v] = true
		}
		if got := a.Union(b); got != want {
			t.Fatalf("case %d: Union found %d common members, want %d", i, got, want)
		}
		sameMembers(t, a, ma, limit)
	}
}

// TestMergedRecordsEqualOneRecord splits one stream of deliveries, with
// redeliveries, over three records in a random way: merged, they must
// reconcile exactly as one record that saw every delivery.
func TestMergedRecordsEqualOneRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const producers = 3
	whole := NewSubscription(producers)
	parts := []*Subscription{NewSubscription(producers), NewSubscription(producers), NewSubscription(producers)}
	for range 30000 {
		p, seq := uint32(rng.IntN(producers+1)), rng.Uint64N(12000) // producer 3 is unknown
		whole.Record(p, seq)
		parts[rng.IntN(len(parts))].Record(p, seq)
	}
	merged := NewSubscription(0)
	for _, part := range parts {
		data, err := json.Marshal(part)
		if err != nil {
			t.Fatal(err)
		}
		var back Subscription
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		merged.Merge(&back)
	}
	outcomes := make([]Outcome, producers)
	for i := range outcomes {
		outcomes[i] = Outcome{Sent: 10000, Failed: setOf(3, 4000)}
	}
	if got, want := merged.Reconcile(outcomes), whole.Reconcile(outcomes); got != want {
		t.Fatalf("merged records reconcile to %+v, one record to %+v", got, want)
	}
	if merged.Distinct() != whole.Distinct() {
		t.Fatalf("merged Distinct = %d, one record's = %d", merged.Distinct(), whole.Distinct())
	}
}

func FuzzSeqSetUnmarshal(f *testing.F) {
	s, _ := randomSet(rand.New(rand.NewPCG(1, 1)), 300, 3*blockBits, 2)
	bin, _ := s.MarshalBinary()
	f.Add(bin)
	f.Add([]byte{0, 0})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s SeqSet
		if err := s.UnmarshalBinary(data); err != nil {
			return
		}
		// What decodes re-encodes to a set with the same members.
		again, _ := s.MarshalBinary()
		var back SeqSet
		if err := back.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-encoded set does not decode: %v", err)
		}
		if back.Len() != s.Len() || back.Union(&s) != s.Len() {
			t.Fatalf("re-encoded set differs")
		}
	})
}
