package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/pacer"
	"github.com/brokerbench/brokerbench/internal/payload"
)

// producerStats are one producer's counters and histograms. Counters are
// read by the collector while the producer runs.
type producerStats struct {
	sent, acked, failed     atomic.Int64
	publishLatency, sendLag *metrics.Histogram
	failMu                  sync.Mutex
	failedByKind            map[string]int64
	failedSeqs              accounting.SeqSet
}

func newProducerStats() *producerStats {
	return &producerStats{publishLatency: metrics.NewHistogram(), sendLag: metrics.NewHistogram(), failedByKind: map[string]int64{}}
}

// producerWorker sends one producer's messages on its schedule. Messages
// live in a fixed pool of slots, which bounds the messages in flight; a send
// waits for a free slot but keeps its intended time, so a slow broker shows
// up as latency, not as a silently lower rate.
type producerWorker struct {
	id     uint32
	pacer  pacer.Pacer
	limit  int64 // messages to send; 0 = until stopped
	keys   *payload.Keys
	stats  *producerStats
	slots  []driver.Message
	intent []int64  // intended send time per slot
	seqOf  []uint64 // sequence number per slot
	busy   []atomic.Bool
	free   chan int
	record bool // record latencies (see Config.NoLatencyRecording)
	prod   driver.Producer
}

func newProducerWorker(id uint32, p pacer.Pacer, limit int64, keys *payload.Keys, pool [][]byte, inFlight int) *producerWorker {
	w := &producerWorker{
		id: id, pacer: p, limit: limit, keys: keys, stats: newProducerStats(),
		slots: make([]driver.Message, inFlight), intent: make([]int64, inFlight),
		seqOf: make([]uint64, inFlight), busy: make([]atomic.Bool, inFlight), free: make(chan int, inFlight),
	}
	for i := range w.slots {
		src := pool[(int(id)+i)%len(pool)]
		w.slots[i] = driver.Message{Value: append([]byte(nil), src...), Slot: i}
		w.free <- i
	}
	return w
}

// onAck is the producer's driver.AckFunc.
func (w *producerWorker) onAck(m *driver.Message, err error) {
	lat := clock.Now() - w.intent[m.Slot]
	if err == nil {
		w.stats.acked.Add(1)
		if w.record {
			w.stats.publishLatency.RecordNanos(lat)
		}
	} else {
		w.stats.failed.Add(1)
		kind := driver.ErrorKind(err)
		w.stats.failMu.Lock()
		w.stats.failedByKind[kind]++
		w.stats.failedSeqs.Add(w.seqOf[m.Slot])
		w.stats.failMu.Unlock()
	}
	w.busy[m.Slot].Store(false)
	w.free <- m.Slot
}

// run sends until ctx ends or the limit is reached. start is the schedule's
// origin (clock nanoseconds). sendCtx is given to the driver's Send: it ends
// only when the run is aborted, so that messages sent just before a normal
// stop are still delivered.
func (w *producerWorker) run(ctx, sendCtx context.Context, start int64) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for seq := uint64(0); w.limit == 0 || int64(seq) < w.limit; seq++ {
		if ctx.Err() != nil {
			return
		}
		due := w.pacer.Due(seq)
		intended := int64(-1)
		if due >= 0 {
			intended = start + int64(due)
			if wait := intended - clock.Now(); wait > 0 {
				timer.Reset(time.Duration(wait))
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
			}
		}
		var slot int
		select {
		case slot = <-w.free:
		case <-ctx.Done():
			return
		}
		now := clock.Now()
		if intended < 0 {
			intended = now
		}
		if w.record {
			w.stats.sendLag.RecordNanos(now - intended)
		}
		m := &w.slots[slot]
		w.intent[slot] = intended
		w.seqOf[slot] = seq
		w.busy[slot].Store(true)
		payload.Put(m.Value, payload.Header{ProducerID: w.id, Seq: seq, SendTime: intended})
		m.Key = w.keys.Next()
		w.stats.sent.Add(1)
		w.prod.Send(sendCtx, m)
	}
}

// outcome reports which of the producer's messages failed and which are
// still unresolved, for reconciliation with the consumers' records.
func (w *producerWorker) outcome() accounting.Outcome {
	o := accounting.Outcome{Sent: uint64(w.stats.sent.Load()), Failed: &accounting.SeqSet{}, Pending: &accounting.SeqSet{}}
	w.stats.failMu.Lock()
	w.stats.failedSeqs.CopyInto(o.Failed)
	w.stats.failMu.Unlock()
	for slot := range w.busy {
		if w.busy[slot].Load() {
			o.Pending.Add(w.seqOf[slot])
		}
	}
	return o
}
