package stream

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// TestProducerSettlesEachMessageOnce: a message is acknowledged once
// whichever of the client's refusal and its confirm comes first, one
// Close fails is not acknowledged again by a late confirm, a confirm of a
// message the producer did not send is ignored, and after Close a message
// is failed at once.
func TestProducerSettlesEachMessageOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acks := map[*driver.Message][]error{}
		p := newProducer(func(m *driver.Message, err error) { acks[m] = append(acks[m], err) })
		msgs := make([]*driver.Message, 4)
		tracked := make([]*sent, 3)
		for i := range msgs {
			msgs[i] = &driver.Message{Value: []byte{byte(i)}}
		}
		for i := range tracked {
			if tracked[i] = p.track(msgs[i]); tracked[i] == nil {
				t.Fatalf("message %d: not tracked by an open producer", i)
			}
			if got := tracked[i].GetData(); len(got) != 1 || got[0][0] != byte(i) {
				t.Fatalf("message %d: the stream message carries %v", i, got)
			}
		}
		refused := errKind{"SEND", errors.New("refused")}
		p.settle(tracked[0], refused)
		p.settle(tracked[0], nil) // the client reports it too
		p.settle(tracked[1], nil)
		p.settle(tracked[1], errors.New("reported twice"))
		p.settle(amqp.NewMessage(nil), nil) // not ours

		start := time.Now()
		p.Close() // waits for message 2's confirm, then fails it
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("Close waited %v for the confirm in flight, want 5s", waited)
		}
		p.settle(tracked[2], nil) // a late confirm
		if p.track(msgs[3]) != nil {
			t.Error("a closed producer tracks a new message")
		}

		want := []string{"SEND", "", "CLOSED", "CLOSED"}
		for i, m := range msgs {
			errs := acks[m]
			if len(errs) != 1 {
				t.Errorf("message %d acknowledged %d times (%v), want once", i, len(errs), errs)
				continue
			}
			var kind string
			var k errKind
			if errors.As(errs[0], &k) {
				kind = k.Kind()
			}
			if kind != want[i] {
				t.Errorf("message %d acknowledged with %v, want kind %q", i, errs[0], want[i])
			}
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Errorf("Flush after every message settled: %v", err)
		}
	})
}
