package netproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if got != msg+"\n" {
		t.Fatalf("echo returned %q, want %q", got, msg)
	}
	return time.Since(start)
}

// TestDelayAddsToRoundTrip checks that a one-way delay d adds 2d to a round
// trip, that order and content survive, and that the delay can change.
func TestDelayAddsToRoundTrip(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if rtt := roundTrip(t, c, r, "warm"); rtt > 50*time.Millisecond {
		t.Fatalf("undelayed round trip took %s", rtt)
	}
	const d = 30 * time.Millisecond
	p.SetDelay(d)
	for i := range 3 {
		rtt := roundTrip(t, c, r, "delayed")
		if rtt < 2*d || rtt > 2*d+40*time.Millisecond {
			t.Fatalf("round trip %d with %s each way took %s, want about %s", i, d, rtt, 2*d)
		}
	}
	// Pipelined messages keep their order and are not serialised by the
	// delay: ten writes in a row arrive about 2d later, not 20d.
	start := time.Now()
	for i := range 10 {
		if _, err := c.Write([]byte{byte('0' + i), '\n'}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		line, err := r.ReadString('\n')
		if err != nil || line != string([]byte{byte('0' + i), '\n'}) {
			t.Fatalf("pipelined reply %d = %q, %v", i, line, err)
		}
	}
	if el := time.Since(start); el > 4*d {
		t.Fatalf("10 pipelined round trips took %s; the delay must not serialise them", el)
	}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	if _, err := Listen("0.0.0.0:0", "127.0.0.1:1"); err == nil {
		t.Fatal("Listen on 0.0.0.0 succeeded; only loopback is allowed")
	}
}
