package amqp10

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// TestMessageReused: a message sent again is sent as the AMQP message
// made on its first send, carrying its current value, without
// allocating.
func TestMessageReused(t *testing.T) {
	p := &producer{durable: true}
	m := &driver.Message{Value: []byte("first")}
	first := p.message(m)
	if !first.Header.Durable || string(first.Data[0]) != "first" {
		t.Fatalf("first send: durable %v, data %q", first.Header.Durable, first.Data[0])
	}
	m.Value = []byte("second")
	if again := p.message(m); again != first || string(again.Data[0]) != "second" {
		t.Errorf("second send: a new message (%v) or the old value %q", again != first, again.Data[0])
	}
	if n := testing.AllocsPerRun(100, func() { p.message(m) }); n != 0 {
		t.Errorf("%v allocations per send; want 0", n)
	}
}
