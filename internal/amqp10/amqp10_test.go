package amqp10

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
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

// TestConnectFrom: the nodes are tried once each in turn from the index
// given, modulo their number (one node is tried whatever the index), and
// the error of none answering names every node tried. The nodes here
// take each connection and close it at once.
func TestConnectFrom(t *testing.T) {
	var (
		mu    sync.Mutex
		tried []int
	)
	var nodes []*Broker
	for i := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				tried = append(tried, i)
				mu.Unlock()
				c.Close()
			}
		}()
		nodes = append(nodes, &Broker{Addr: l.Addr().String(), Dial: driver.Options{}.Dial})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := ConnectFrom(ctx, nodes, 4)
	if err == nil {
		t.Fatal("connected to nodes that close every connection")
	}
	for _, n := range nodes {
		if !strings.Contains(err.Error(), n.Addr) {
			t.Errorf("the error does not name %s: %v", n.Addr, err)
		}
	}
	if _, _, err := ConnectFrom(ctx, nodes[2:], 7); err == nil {
		t.Fatal("connected to a node that closes every connection")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 2, 0, 2}; !slices.Equal(tried, want) {
		t.Errorf("nodes tried: %v; want %v", tried, want)
	}
}
