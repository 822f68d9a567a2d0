package pulsar

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestActiveConsumerDelay: the delay of a Failover subscription's first
// read is the broker's runtime setting, read once; where the admin API
// does not tell it, Pulsar's default.
func TestActiveConsumerDelay(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   time.Duration
	}{
		// The broker's own setting.
		{"set", http.StatusOK, `{"activeConsumerFailoverDelayTimeMillis":"250","brokerServicePort":"6650"}`, 250 * time.Millisecond},
		// No delay: the broker reads at once.
		{"none", http.StatusOK, `{"activeConsumerFailoverDelayTimeMillis":"0"}`, 0},
		// A client that is not a superuser may not read the runtime
		// configuration.
		{"forbidden", http.StatusForbidden, `{"reason":"Unauthorized"}`, defaultFailoverDelay},
		// A broker that does not say.
		{"missing", http.StatusOK, `{}`, defaultFailoverDelay},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if r.URL.Path != "/admin/v2/brokers/configuration/runtime" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			d := &Driver{admin: &admin{base: srv.URL, hc: srv.Client()}}
			for range 2 {
				if got := d.activeConsumerDelay(context.Background()); got != tc.want {
					t.Errorf("delay %s, want %s", got, tc.want)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("%d calls of the admin API, want 1", n)
			}
		})
	}
}

// TestReadyAfterDispatchDelay: a consumer whose broker delays its first
// read is ready no sooner than that delay after it subscribed; one
// without is ready at once; a cancelled wait says so.
func TestReadyAfterDispatchDelay(t *testing.T) {
	const delay = 200 * time.Millisecond
	c := &consumer{subscribed: time.Now(), dispatchDelay: func(context.Context) time.Duration { return delay }}
	if err := c.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(c.subscribed); waited < delay {
		t.Errorf("ready %s after subscribing, before the broker's %s", waited, delay)
	}
	if err := (&consumer{subscribed: time.Now()}).Ready(context.Background()); err != nil {
		t.Errorf("a consumer of no delay: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c = &consumer{subscribed: time.Now(), dispatchDelay: func(context.Context) time.Duration { return time.Hour }}
	if err := c.Ready(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
}
