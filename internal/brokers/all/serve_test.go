package all_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers"
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

// TestAsksForCredentials walks every local kind that can be secured:
// on a secured cluster, its plain listener asks a client for the
// cluster's credentials exactly where the kind's config says so, and
// every other listener it can serve asks (they need at least trust in
// the cluster's authority); what the kind declares open is a listener
// it serves; an unsecured cluster asks on none.
func TestAsksForCredentials(t *testing.T) {
	// plainAsks says, per kind, whether a secured node asks a client for
	// credentials on its plain listener, as the kind's config makes it.
	plainAsks := map[string]bool{
		"kafka":     false, // PLAINTEXT, no authorizer
		"rabbitmq":  false, // guest stays, with its well-known password
		"nats":      false, // allow_non_tls and no_auth_user
		"redis":     false, // the default user stays without a password
		"rocketmq":  false, // the proxy's permissive TLS, no user checked
		"pulsar":    true,  // token authentication on every listener
		"artemis":   true,  // the user's password on every acceptor
		"mosquitto": true,  // allow_anonymous false, password_file, for every listener
		"nsq":       true,  // TLS and a client certificate required on every port
	}
	// otherOpen are the listeners, besides the kind's own, that drivers
	// connect to without credentials.
	otherOpen := map[string][]string{"rabbitmq": {"stream"}}
	securers := 0
	for _, name := range brokers.LocalKinds() {
		c, err := brokers.NewLocal(name, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := c.Kind.(local.Securer)
		if !ok {
			continue
		}
		securers++
		want, known := plainAsks[name]
		if !known {
			t.Errorf("%s: a new kind that can be secured: say here whether its plain listener asks for credentials", name)
			continue
		}
		c.StateDir = t.TempDir()
		if c.AsksForCredentials("") || c.AsksForCredentials(s.Listeners()[0]) {
			t.Errorf("%s: an unsecured cluster asks for credentials on its plain listener", name)
		}
		c.Listeners = s.Listeners()
		if !c.Secured() {
			t.Fatalf("%s: serving %v, the cluster is not secured", name, c.Listeners)
		}
		for _, l := range []string{"", "client", s.Listeners()[0]} {
			if got := c.AsksForCredentials(l); got != want {
				t.Errorf("%s: secured, listener %q asks for credentials: %v, want %v", name, l, got, want)
			}
		}
		for _, l := range s.Listeners()[1:] {
			if !c.AsksForCredentials(l) {
				t.Errorf("%s: secured, listener %q asks for no credentials", name, l)
			}
		}
		for _, l := range otherOpen[name] {
			if c.AsksForCredentials(l) {
				t.Errorf("%s: secured, listener %q asks for credentials", name, l)
			}
		}
		ports := map[string]bool{}
		for _, n := range c.Kind.Layout(c) {
			for p := range n.Ports {
				ports[p] = true
			}
		}
		for _, l := range s.OpenListeners() {
			if !slices.Contains(s.Listeners(), l) && !ports[l] {
				t.Errorf("%s: open listener %q is neither one of its listeners %v nor a port of its nodes", name, l, s.Listeners())
			}
		}
	}
	if securers != len(plainAsks) {
		t.Errorf("%d local kinds can be secured, want %d", securers, len(plainAsks))
	}
}

// TestClientAuth: the secured kinds whose clients present something other
// than the cluster's user and password (a Pulsar token, an NSQ client
// certificate) say what in their status, naming the file it comes from;
// the others leave the user and password to be shown.
func TestClientAuth(t *testing.T) {
	other := map[string]string{"pulsar": "token", "nsq": "certificate"}
	sec := &local.Security{CAFile: "/s/ca.pem", ClientKeyStore: "/s/client.pem", Username: local.Username, PasswordFile: "/s/password"}
	for _, name := range brokers.LocalKinds() {
		c, err := brokers.NewLocal(name, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := c.Kind.(local.ClientAuther)
		word, want := other[name]
		if ok != want {
			t.Errorf("%s: says what its clients present: %v, want %v", name, ok, want)
			continue
		}
		if ok {
			if got := a.ClientAuth(sec); !strings.Contains(got, word) || !strings.Contains(got, "/s/") {
				t.Errorf("%s: ClientAuth %q names no %s and no file", name, got, word)
			}
		}
	}
}
