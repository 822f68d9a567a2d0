package amqp10

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// TestOtherProtocol: a server that answers AMQP 1.0's protocol header
// with AMQP 0-9-1's (RabbitMQ without its AMQP 1.0 plugin) fails the
// connection with ErrOtherProtocol, not with a bare protocol error.
func TestOtherProtocol(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("AMQP\x00\x00\x09\x01"))
		_, _ = c.Read(make([]byte, 8))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := &Broker{Addr: l.Addr().String(), Dial: driver.Options{}.Dial}
	if _, err := b.Connect(ctx); !errors.Is(err, ErrOtherProtocol) {
		t.Errorf("a server answering in AMQP 0-9-1: %v; want ErrOtherProtocol", err)
	}
}
