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
	// sent and sendBlocked are written by the producer goroutine, acked
	// and failed by the client's callbacks on another core: the padding
	// keeps them on separate cache lines.
	sent atomic.Int64
	// sendBlocked is the time the producer spent in the driver's Send
	// waiting for the client to take a message (its buffer full), in
	// nanoseconds: every Send that took longer than blockedSend.
	sendBlocked atomic.Int64
	// sendingSince is the clock time at which a timed Send began, while
	// it is under way (0 otherwise), so that a Send blocked to the end of
	// an interval counts in that interval; sendLongest is the longest
	// timed Send, in nanoseconds.
	sendingSince, sendLongest atomic.Int64
	// lateGrowth is how much the producer's lateness beyond lateFloor
	// grew, summed over its sends, in nanoseconds; lateFromWaits is the
	// part of that growth that accrued while it waited on the broker (in
	// a Send, or for a free slot) between two sends.
	lateGrowth, lateFromWaits atomic.Int64
	_                         [16]byte
	acked, failed             atomic.Int64
	// lastAck is the clock time of the latest acknowledgement (0 before
	// the first), and resumed the outage watcher's gate: 0 when it waits
	// for nothing, -t while it waits for the first acknowledgement after
	// clock time t, then that acknowledgement's clock time. Both are
	// written by the acknowledgement, beside acked, whose cache line it
	// holds already.
	lastAck, resumed atomic.Int64
	_                [32]byte

	// acks records two lanes per acknowledgement: the publish latency,
	// from the intended send time (lane 0), and the service time, from the
	// actual send time, the broker's and client's share alone (lane 1).
	acks, sendLag *metrics.Histogram
	failMu        sync.Mutex
	failedByKind  map[string]int64
	failedSeqs    accounting.SeqSet
}

// Lanes of producerStats.acks.
const (
	publishLane = iota
	serviceLane
)

func newProducerStats() *producerStats {
	return &producerStats{acks: metrics.NewLanes(2), sendLag: metrics.NewHistogram(), failedByKind: map[string]int64{}}
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
	slots  []slot
	free   *slotPool
	stock  []int // free slots taken from free, used before taking more
	record bool  // record latencies (see Config.NoLatencyRecording)
	prod   driver.Producer
	// txn is the producer's transactions; nil when it sends without.
	txn *transactions
	// unpublished counts sends not yet added to stats.sent: the producer
	// publishes its count in batches, because an atomic add per message
	// waits for every pending store of that message (header, slot) to
	// reach the cache, which cost about 10% of the producer's CPU.
	unpublished int64
}

// publishEvery bounds how many sends stats.sent may lag behind while the
// producer is busy; it catches up whenever the producer waits and when it
// returns.
const publishEvery = 64

func newProducerWorker(id uint32, p pacer.Pacer, limit int64, keys *payload.Keys, pool [][]byte, inFlight int) *producerWorker {
	w := &producerWorker{
		id: id, pacer: p, limit: limit, keys: keys, stats: newProducerStats(),
		slots: make([]slot, inFlight), free: newSlotPool(inFlight),
		stock: make([]int, 0, inFlight),
	}
	for i := range w.slots {
		src := pool[(int(id)+i)%len(pool)]
		w.slots[i].msg = driver.Message{Value: append([]byte(nil), src...), Slot: i}
	}
	return w
}

// slot is one message in flight and what the producer knows of it. The
// acknowledgement reads msg.Slot and intent, side by side here: at max rate
// every slot is cold by the time its acknowledgement arrives, and each
// separate array or distant field cost a cache miss per message.
type slot struct {
	msg    driver.Message
	intent int64  // intended send time
	seq    uint64 // sequence number
}

// onAck is the producer's driver.AckFunc.
func (w *producerWorker) onAck(m *driver.Message, err error) {
	st := &w.slots[m.Slot]
	now := clock.Now()
	if err == nil {
		w.stats.acked.Add(1)
		w.stats.ackedAt(now)
		if w.record {
			w.stats.acks.RecordPair(now-st.intent, now-m.Time)
		}
	} else {
		w.stats.failed.Add(1)
		kind := driver.ErrorKind(err)
		w.stats.failMu.Lock()
		w.stats.failedByKind[kind]++
		w.stats.failedSeqs.Add(st.seq)
		w.stats.failMu.Unlock()
	}
	w.free.put(m.Slot)
}

// ackedAt records, for the outage watcher, an acknowledgement received at
// clock time now. Safe for concurrent use: with callbacks that run
// concurrently, lastAck keeps the latest time, and the gate the first of
// them to pass it.
func (s *producerStats) ackedAt(now int64) {
	for last := s.lastAck.Load(); now > last; last = s.lastAck.Load() {
		if s.lastAck.CompareAndSwap(last, now) {
			break
		}
	}
	if g := s.resumed.Load(); g < 0 && now > -g {
		s.resumed.CompareAndSwap(g, now)
	}
}

// run sends until ctx ends or the limit is reached. start is the schedule's
// origin (clock nanoseconds). sendCtx is given to the driver's Send: it ends
// only when the run is aborted, so that messages sent just before a normal
// stop are still delivered.
//
// A transactional producer opens a transaction before a message when none
// is open, and ends it when full, when its interval is over (also while
// waiting for the next send) and when the producer stops.
func (w *producerWorker) run(ctx, sendCtx context.Context, start int64) {
	defer w.publishSent()
	if w.txn != nil {
		defer w.endTransaction(sendCtx)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// sentAt is the clock time at which the last untimed Send began, 0 if
	// none or if it is not to be measured: the next clock reading, made
	// anyway, tells how long it took, without a reading of its own.
	var sentAt int64
	// waited is the producer's wait on the broker since the last send
	// left, as far as measured; lateness is that send's lateness beyond
	// lateFloor.
	var waited, lateness int64
	for seq := uint64(0); w.limit == 0 || int64(seq) < w.limit; seq++ {
		if ctx.Err() != nil {
			return
		}
		due := w.pacer.Due(seq)
		intended := int64(-1)
		// after is the first clock reading after the last Send returned.
		var after int64
		if due >= 0 {
			intended = start + int64(due)
			if w.txn != nil && w.txn.deadline() < intended {
				if _, ok := w.sleepUntil(ctx, timer, w.txn.deadline()); !ok {
					return
				}
				w.endTransaction(sendCtx)
			}
			var ok bool
			if after, ok = w.sleepUntil(ctx, timer, intended); !ok {
				return
			}
		}
		if w.txn != nil && !w.beforeSend(sendCtx, seq, clock.Now()) {
			return
		}
		took := len(w.stock) == 0
		if took {
			w.publishSent()
			blocked := w.free.blocked.Load()
			var ok bool
			if w.stock, ok = w.free.take(ctx, w.stock); !ok {
				return
			}
			waited += w.free.blocked.Load() - blocked
		}
		slot := w.stock[len(w.stock)-1]
		w.stock = w.stock[:len(w.stock)-1]
		now := clock.Now()
		if after == 0 && !took {
			// A wait for a free slot in between is counted by the pool.
			after = now
		}
		if sentAt > 0 && after > 0 && after-sentAt > int64(blockedSend) {
			w.noteSendTook(after - sentAt)
			waited += after - sentAt
		}
		if intended < 0 {
			intended = now
		}
		if late := max(0, now-intended-int64(lateFloor)); late != lateness {
			if grew := late - lateness; grew > 0 {
				w.stats.lateGrowth.Add(grew)
				w.stats.lateFromWaits.Add(min(grew, waited))
			}
			lateness = late
		}
		waited = 0
		if w.record {
			w.stats.sendLag.RecordNanos(now - intended)
		}
		st := &w.slots[slot]
		st.intent, st.seq = intended, seq
		m := &st.msg
		m.Time = now
		payload.Put(m.Value, payload.Header{ProducerID: w.id, Seq: seq, SendTime: intended})
		m.Key = w.keys.Next()
		timed := false
		if w.unpublished++; w.unpublished == publishEvery {
			w.publishSent()
			timed = true
		}
		if timed {
			w.stats.sendingSince.Store(now)
		}
		w.prod.Send(sendCtx, m)
		sentAt = now
		if timed {
			waited = w.noteSendTime(now)
			sentAt = 0
		}
		if w.txn != nil {
			w.afterSend(sendCtx)
			sentAt = 0
		}
	}
}

// sleepUntil waits until clock time t, and returns false if ctx ends
// first; checked is the clock time at which it was called.
func (w *producerWorker) sleepUntil(ctx context.Context, timer *time.Timer, t int64) (checked int64, ok bool) {
	checked = clock.Now()
	wait := t - checked
	if wait <= 0 {
		return checked, true
	}
	w.publishSent()
	timer.Reset(time.Duration(wait))
	select {
	case <-ctx.Done():
		return checked, false
	case <-timer.C:
		return checked, true
	}
}

// blockedSend is how long a Send must take to count as waiting for the
// client rather than as the client's work on the message.
const blockedSend = 50 * time.Microsecond

// lateFloor is the lateness of a send below which its growth is not
// attributed (lateGrowth): a timer's wake-up jitter makes every paced
// send a little late, and a send lag limit is never below it.
const lateFloor = time.Millisecond

// noteSendTime records a timed Send that began at from and returns its
// wait on the broker (0 if it took blockedSend or less). One send in
// publishEvery is timed, with a clock reading of its own and its start
// published while it is under way (sendingSince), so that a wait under
// way shows before it ends; the others are measured by noteSendTook.
func (w *producerWorker) noteSendTime(from int64) int64 {
	w.stats.sendingSince.Store(0)
	d := clock.Now() - from
	w.noteSendTook(d)
	if d <= int64(blockedSend) {
		return 0
	}
	return d
}

// noteSendTook records a Send that took d nanoseconds, counted as
// waiting on the broker if longer than blockedSend. An untimed Send is
// measured from its start to the producer's next clock reading, which
// adds the loop's own work, well under blockedSend, and any time the
// goroutine was not running, which the verdict weighs against this
// machine's scheduling delay.
func (w *producerWorker) noteSendTook(d int64) {
	if d > int64(blockedSend) {
		w.stats.sendBlocked.Add(d)
		if d > w.stats.sendLongest.Load() {
			w.stats.sendLongest.Store(d)
		}
	}
}

// waitedForBroker returns the producer's time spent waiting on the broker
// until now (clock ns), in nanoseconds: for a free in-flight slot, or in
// a Send for the client to take a message, waits under way included.
func (w *producerWorker) waitedForBroker(now int64) int64 {
	t := w.free.blockedUntil(now) + w.stats.sendBlocked.Load()
	if from := w.stats.sendingSince.Load(); from > 0 && now-from > int64(blockedSend) {
		t += now - from
	}
	return t
}

// longestWait returns the producer's longest single wait on the broker
// until now, in nanoseconds, a wait under way included.
func (w *producerWorker) longestWait(now int64) int64 {
	longest := max(w.free.longestUntil(now), w.stats.sendLongest.Load())
	if from := w.stats.sendingSince.Load(); from > 0 {
		longest = max(longest, now-from)
	}
	return longest
}

// publishSent adds the sends counted since the last call to stats.sent.
func (w *producerWorker) publishSent() {
	if w.unpublished > 0 {
		w.stats.sent.Add(w.unpublished)
		w.unpublished = 0
	}
}

// outcome reports which of the producer's messages failed and which are
// still unresolved, for reconciliation with the consumers' records. A slot
// neither free nor in the producer's stock holds a message in flight. It
// must be called after run has returned.
func (w *producerWorker) outcome() accounting.Outcome {
	o := accounting.Outcome{Sent: uint64(w.stats.sent.Load()), Failed: &accounting.SeqSet{}, Pending: &accounting.SeqSet{}}
	w.stats.failMu.Lock()
	w.stats.failedSeqs.CopyInto(o.Failed)
	w.stats.failMu.Unlock()
	free := make([]bool, len(w.slots))
	w.free.markFree(free)
	for _, slot := range w.stock {
		free[slot] = true
	}
	for slot, isFree := range free {
		if !isFree {
			o.Pending.Add(w.slots[slot].seq)
		}
	}
	if w.txn != nil {
		w.txn.addOutcome(&o)
	}
	return o
}
