package distributed

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/clock"
)

// TestOffsetOfASkewedClock measures a worker whose clock runs 250 ms
// ahead and whose replies take 2 ms: the estimate must be within its own
// error bound of the truth, and the bound must reflect the round trip.
func TestOffsetOfASkewedClock(t *testing.T) {
	const skew = int64(250 * time.Millisecond)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		now := clock.Now() + skew
		time.Sleep(2 * time.Millisecond)
		writeJSON(w, http.StatusOK, TimeReply{Now: now})
	}))
	defer srv.Close()
	off, err := measureOffset(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if diff := off.Nanos - skew; diff > off.ErrorNanos || -diff > off.ErrorNanos {
		t.Errorf("offset %d ns, true %d ns: off by %d ns, more than the bound %d ns", off.Nanos, skew, diff, off.ErrorNanos)
	}
	if off.RoundTripNanos < int64(2*time.Millisecond) || off.ErrorNanos*2 < off.RoundTripNanos {
		t.Errorf("round trip %d ns, bound %d ns", off.RoundTripNanos, off.ErrorNanos)
	}
}
