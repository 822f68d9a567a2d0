package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// TestInTurn: addresses are tried once each from the given one on, until
// one answers; a refusal stops the attempts; when all fail, every error
// is returned.
func TestInTurn(t *testing.T) {
	errDown := errors.New("down")
	cases := []struct {
		name      string
		n, from   int
		up        map[int]bool // answering addresses
		refuses   int          // an address that refuses the credentials (-1: none)
		tried     []int
		at        int
		wantError bool
	}{
		// The first address answers: nothing else is tried.
		{"first answers", 3, 1, map[int]bool{1: true}, -1, []int{1}, 1, false},
		// After a loss at 0, the next one (1) is down: 2 at once.
		{"skips a dead node", 3, 1, map[int]bool{2: true, 0: true}, -1, []int{1, 2}, 2, false},
		// From the last address on, it wraps around.
		{"wraps", 3, 2, map[int]bool{0: true}, -1, []int{2, 0}, 0, false},
		// An index beyond the list (a counter) is taken modulo its length.
		{"modulo", 3, 7, map[int]bool{1: true}, -1, []int{1}, 1, false},
		// None answers: each tried once, all errors returned.
		{"all down", 3, 0, nil, -1, []int{0, 1, 2}, 2, true},
		// A refusal ends the attempts: the other nodes would refuse too.
		{"refused", 3, 0, map[int]bool{2: true}, 1, []int{0, 1}, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tried []int
			at, err := inTurn(tc.n, tc.from, func(i int) error {
				tried = append(tried, i)
				switch {
				case i == tc.refuses:
					return stopTrying{driver.Refused(errors.New("bad password"))}
				case tc.up[i]:
					return stopTrying{nil}
				}
				return fmt.Errorf("node %d: %w", i, errDown)
			})
			if fmt.Sprint(tried) != fmt.Sprint(tc.tried) || at != tc.at || (err != nil) != tc.wantError {
				t.Errorf("tried %v, at %d, err %v; want %v, %d, error %v", tried, at, err, tc.tried, tc.at, tc.wantError)
			}
			if tc.name == "all down" && strings.Count(err.Error(), "down") != 3 {
				t.Errorf("all down: %v; want the three errors", err)
			}
		})
	}
}

// proxy forwards TCP connections to a broker until it is killed, which
// ends every connection at once, as a node's death does.
type proxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
	total atomic.Int64
}

func newProxy(t *testing.T, to string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, to: to}
	go p.serve()
	t.Cleanup(p.kill)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.total.Add(1)
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// kill stops accepting and cuts every connection.
func (p *proxy) kill() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// TestProducerFailsOverAtOnce: with two addresses of one cluster, a
// producer whose node goes away connects through the other at once: only
// the messages in flight when the connection died fail, no send fails
// waiting for a reconnection, and publishing resumes about a second
// (failoverSettle) after the loss. The topic is then deleted through the
// address still up.
func TestProducerFailsOverAtOnce(t *testing.T) {
	a, b := newProxy(t, server.Get(t).Addr), newProxy(t, server.Get(t).Addr)
	d, err := New(driverConfig("CLASSIC"), driver.Options{Endpoints: []string{a.addr(), b.addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := "bb-failover-" + time.Now().Format("150405.000000")
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	var consumed atomic.Int64
	c, err := d.NewConsumer(ctx, driver.ConsumerSpec{Topic: topic, Subscription: topic + "-sub"}, func(*driver.Delivery) { consumed.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu        sync.Mutex
		failures  []string
		lastAck   time.Time
		killedAt  time.Time
		firstBack time.Time
	)
	aBefore := a.total.Load()
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 10, MaxInFlight: 1000}, func(_ *driver.Message, err error) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if err != nil {
			failures = append(failures, err.Error())
			return
		}
		lastAck = now
		if !killedAt.IsZero() && firstBack.IsZero() && now.After(killedAt) {
			firstBack = now
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Which address the producer took depends on the driver's turn:
	// kill that one.
	producerOn := b
	if a.total.Load() > aBefore {
		producerOn = a
	}
	other := map[*proxy]*proxy{a: b, b: a}[producerOn]
	otherBefore := other.total.Load()
	msgs := make([]driver.Message, 3000)
	for i := range msgs {
		msgs[i].Value = []byte("x")
		p.Send(ctx, &msgs[i])
		time.Sleep(time.Millisecond)
		if i == 1000 {
			mu.Lock()
			killedAt = time.Now()
			mu.Unlock()
			producerOn.kill()
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		if strings.Contains(f, "connecting again") {
			t.Errorf("a send failed waiting for a reconnection: %s", f)
			break
		}
	}
	back := firstBack.Sub(killedAt)
	t.Logf("%d of %d sends failed with the connection; publishing resumed %s after the node went away", len(failures), len(msgs), back)
	if firstBack.IsZero() || back > failoverSettle+time.Second {
		t.Errorf("publishing resumed %s after the node went away; want about %s", back, failoverSettle)
	}
	if len(failures) > 500 {
		// Sends went out every millisecond: far fewer than that were in
		// flight when the connection died.
		t.Errorf("%d sends failed; only those in flight when the connection died should", len(failures))
	}
	if lastAck.IsZero() || other.total.Load() == otherBefore {
		t.Errorf("the producer did not move to the other address (%d connections through it)", other.total.Load())
	}
	// Teardown: the admin connection may have been through the address
	// that went away; the delete goes through the other.
	if err := d.DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("delete through the address still up: %v", err)
	}
	if err := d.DeleteTopic(ctx, topic); !errors.Is(err, driver.ErrTopicNotFound) {
		t.Errorf("deleting it again: %v; want ErrTopicNotFound", err)
	}
}

// TestNackingSessionIsReopened: a session that receives nothing but nacks
// for nackReopen is closed and the producer connects again; here a queue
// that rejects every message is bound to the topic, so every publish is
// nacked.
func TestNackingSessionIsReopened(t *testing.T) {
	a := newProxy(t, server.Get(t).Addr)
	d, err := New(driverConfig("CLASSIC"), driver.Options{Endpoints: []string{a.addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := "bb-nacks-" + time.Now().Format("150405.000000")
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	defer d.DeleteTopic(context.Background(), topic)
	ch, err := d.(*Driver).channel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rejecting := topic + ".rejects"
	if _, err := ch.QueueDeclare(rejecting, false, true, false, false, map[string]any{"x-max-length": int32(0), "x-overflow": "reject-publish"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(rejecting, "0", topic, false, nil); err != nil {
		t.Fatal(err)
	}
	var nacks atomic.Int64
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 10, MaxInFlight: 100}, func(_ *driver.Message, err error) {
		if driver.ErrorKind(err) == "NACK" {
			nacks.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	before := a.total.Load()
	msgs := make([]driver.Message, 2500)
	for i := range msgs {
		msgs[i].Value = []byte("x")
		p.Send(ctx, &msgs[i])
		time.Sleep(time.Millisecond)
	}
	_ = p.Flush(ctx)
	p.Close()
	if nacks.Load() == 0 || a.total.Load() == before {
		t.Errorf("%d nacks, %d new connections: a session receiving only nacks for %s must be reopened", nacks.Load(), a.total.Load()-before, nackReopen)
	}
}
