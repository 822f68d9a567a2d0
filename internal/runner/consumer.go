package runner

import (
	"sync/atomic"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/processing"
)

// consumerStats are one consumer's counters, end-to-end histogram and
// ordering record; deliveries are also recorded in the subscription's
// accounting, which the subscription's consumers share.
type consumerStats struct {
	consumed, foreign, outOfOrder atomic.Int64
	endToEnd                      *metrics.Histogram
	record                        bool // record latencies (see Config.NoLatencyRecording)
	// skew, if set, is added to the latency of a message by the
	// producer of that index (Part.SkewNanos).
	skew  []int64
	sub   *accounting.Subscription
	order accounting.Order
	// work, if set, spends the workload's processing time on each
	// message (Workload.ConsumerProcessingTime).
	work *processing.Worker
}

func newConsumerStats(sub *accounting.Subscription, record bool) *consumerStats {
	return &consumerStats{endToEnd: metrics.NewHistogram(), sub: sub, record: record}
}

// onMessage is a consumer's driver.ConsumeFunc: it decodes the header,
// records the end-to-end latency from the intended send time to the
// message's receipt, and accounts for the message (duplicate,
// reordered); then, for a workload with a consumer processing time, it
// spends that time before it returns, so the consumer takes its next
// message only after it. The processing is not part of the end-to-end
// latency: a message that waited behind others' processing shows that
// wait, as it reached the consumer later.
func (s *consumerStats) onMessage(d *driver.Delivery) {
	now := clock.Now()
	h, err := payload.Parse(d.Value)
	if err != nil {
		s.foreign.Add(1)
		return
	}
	if s.record {
		e2e := now - h.SendTime
		if int(h.ProducerID) < len(s.skew) {
			e2e += s.skew[h.ProducerID]
		}
		s.endToEnd.RecordNanos(e2e)
	}
	s.consumed.Add(1)
	if s.sub.Record(h.ProducerID, h.Seq) == accounting.First && s.order.Observe(d.Lane, h.ProducerID, h.Seq) {
		s.outOfOrder.Add(1)
	}
	if s.work != nil {
		s.work.Process()
	}
}
