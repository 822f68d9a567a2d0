package all_test

import (
	"slices"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/brokers/nats"
	"github.com/brokerbench/brokerbench/internal/brokers/rabbitmq"
	"github.com/brokerbench/brokerbench/internal/brokers/redis"
	"github.com/brokerbench/brokerbench/internal/local"
)

// TestServe: a listener every cluster of the kind serves leaves the
// cluster as it is; one served only beside the secured listeners asks for
// all of them; a kind without them is left alone.
func TestServe(t *testing.T) {
	for _, tc := range []struct {
		kind     local.Kind
		listener string
		want     []string
	}{
		{kafka.Kind{}, "plaintext", nil},
		{kafka.Kind{}, "", nil},
		{kafka.Kind{}, "sasl_ssl", kafka.Kind{}.Listeners()},
		{rabbitmq.Kind{}, "amqp", nil},
		{rabbitmq.Kind{}, "stream", nil},
		{rabbitmq.Kind{}, "stream_tls", rabbitmq.Kind{}.Listeners()},
		{nats.Kind{}, "plain", nil},
		{nats.Kind{}, "tls", nats.Kind{}.Listeners()},
		{redis.Kind{}, "tls", redis.Kind{}.Listeners()},
	} {
		c := &local.Cluster{Kind: tc.kind, StateDir: t.TempDir(), Port: 1, Brokers: 1}
		c.Serve(tc.listener)
		if !slices.Equal(c.Listeners, tc.want) {
			t.Errorf("%s: Serve(%q) asks for %v, want %v", tc.kind.Name(), tc.listener, c.Listeners, tc.want)
		}
	}
}
