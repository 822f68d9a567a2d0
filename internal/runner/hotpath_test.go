package runner

import (
	"context"
	"testing"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/pacer"
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

// ackAtOnce is a driver.Producer whose broker acknowledges every message
// inside Send, so that a benchmark measures the producer alone.
type ackAtOnce struct{ w *producerWorker }

func (p ackAtOnce) Send(_ context.Context, m *driver.Message) { p.w.onAck(m, nil) }
func (ackAtOnce) Flush(context.Context) error                 { return nil }
func (ackAtOnce) Close()                                      {}

// BenchmarkProducerSend is the send side per message, acknowledgement
// included: the pacer's due time, a slot, the header, the key and the
// latency records. At a rate no producer reaches, constant is the
// fixed-rate path without its waits.
func BenchmarkProducerSend(b *testing.B) {
	b.Run("unlimited", func(b *testing.B) { benchmarkSend(b, pacer.Unlimited{}) })
	b.Run("constant", func(b *testing.B) { benchmarkSend(b, pacer.Split(1e12, 1, 0)) })
}

// benchmarkSend runs a producer paced by p for b.N messages.
func benchmarkSend(b *testing.B, p pacer.Pacer) {
	keys, err := payload.NewKeys(payload.KeySpec{Mode: payload.RoundRobin}, 1)
	if err != nil {
		b.Fatal(err)
	}
	w := newProducerWorker(0, p, int64(b.N), keys, [][]byte{make([]byte, 100)}, 1024)
	w.record, w.prod = true, ackAtOnce{w}
	b.ReportAllocs()
	b.ResetTimer()
	w.run(context.Background(), context.Background(), clock.Now())
	if w.stats.acked.Load() != int64(b.N) {
		b.Fatalf("acknowledged %d of %d", w.stats.acked.Load(), b.N)
	}
}
