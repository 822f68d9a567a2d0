package runner

import (
	"context"
	"testing"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/payload"
)

// BenchmarkConsumerOnMessage is the consume side per message: header decode,
// end-to-end latency recording and delivery accounting.
func BenchmarkConsumerOnMessage(b *testing.B) {
	s := newConsumerStats(accounting.NewSubscription(1), true)
	value := make([]byte, 100)
	d := &driver.Delivery{Value: value}
	b.ReportAllocs()
	for i := range b.N {
		payload.Put(value, payload.Header{Seq: uint64(i), SendTime: clock.Now()})
		d.Lane = int32(i % 6)
		s.onMessage(d)
	}
	if s.consumed.Load() != int64(b.N) {
		b.Fatalf("consumed %d of %d", s.consumed.Load(), b.N)
	}
}

// BenchmarkProducerAck is the acknowledgement side per message: publish
// latency recording and returning the slot.
func BenchmarkProducerAck(b *testing.B) {
	w := newProducerWorker(0, nil, 0, nil, [][]byte{make([]byte, 100)}, 16)
	w.record = true
	b.ReportAllocs()
	for range b.N {
		if len(w.stock) == 0 {
			w.stock, _ = w.free.take(context.Background(), w.stock)
		}
		slot := w.stock[len(w.stock)-1]
		w.stock = w.stock[:len(w.stock)-1]
		w.slots[slot].intent = clock.Now()
		w.onAck(&w.slots[slot].msg, nil)
	}
}
