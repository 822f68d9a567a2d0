package runner

import (
	"sync/atomic"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/payload"
)

// consumerStats are one consumer's counters and end-to-end histogram.
type consumerStats struct {
	consumed, foreign atomic.Int64
	endToEnd          *metrics.Histogram
}

func newConsumerStats() *consumerStats {
	return &consumerStats{endToEnd: metrics.NewHistogram()}
}

// onMessage is a consumer's driver.ConsumeFunc: it decodes the header and
// records the end-to-end latency from the intended send time.
func (s *consumerStats) onMessage(d *driver.Delivery) {
	now := clock.Now()
	h, err := payload.Parse(d.Value)
	if err != nil {
		s.foreign.Add(1)
		return
	}
	s.endToEnd.RecordNanos(now - h.SendTime)
	s.consumed.Add(1)
}
