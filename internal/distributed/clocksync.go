package distributed

import (
	"context"
	"fmt"
	"net/http"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// offset is a worker's clock relative to the coordinator's, estimated as
// NTP does from round trips: the worker read its clock at some moment
// between the request's send (t0) and the reply's arrival (t1), so with
// both clocks running at one rate its offset is within half the round
// trip of tw - (t0+t1)/2. Of several samples the one with the shortest
// round trip has the tightest bound and is kept.
type offset struct {
	// Nanos is the worker's clock minus the coordinator's.
	Nanos int64
	// ErrorNanos bounds |true offset - Nanos|: half the round trip.
	ErrorNanos int64
	// RoundTripNanos is the kept sample's round trip.
	RoundTripNanos int64
}

// offsetSamples is how many round trips measureOffset makes.
const offsetSamples = 8

// measureOffset estimates the clock offset of the worker at base.
func measureOffset(ctx context.Context, c *http.Client, base string) (offset, error) {
	best := offset{RoundTripNanos: -1}
	for range offsetSamples {
		var reply TimeReply
		t0 := clock.Now()
		if err := getJSON(ctx, c, base+APIPrefix+PathTime, &reply); err != nil {
			return offset{}, err
		}
		t1 := clock.Now()
		if rtt := t1 - t0; best.RoundTripNanos < 0 || rtt < best.RoundTripNanos {
			best = offset{Nanos: reply.Now - (t0+t1)/2, ErrorNanos: (rtt + 1) / 2, RoundTripNanos: rtt}
		}
	}
	if best.RoundTripNanos < 0 {
		return offset{}, fmt.Errorf("no clock sample from %s", base)
	}
	return best, nil
}
