// Package netproxy forwards TCP connections from a loopback listener to a
// target address, delaying every byte by a settable one-way delay in each
// direction. It puts a known network delay between a client and a broker,
// for validating latency measurements and for fault injection.
//
// The delay is a propagation delay, not a bandwidth limit: data read at time
// t is written at t+delay, and later data is never written before earlier
// data, so a stream keeps its order and its throughput.
package netproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a running delay proxy. Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds, each direction
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a proxy on listenAddr (which must be a loopback address,
// e.g. "127.0.0.1:0") forwarding to target.
func Listen(listenAddr, target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return nil, fmt.Errorf("proxy listen address %q: %w", listenAddr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("proxy listen address %q: only loopback addresses are allowed", listenAddr)
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay sets the one-way delay added in each direction, for data read
// from now on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops accepting, closes every connection and waits for the
// forwarding goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			continue
		}
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

// chunk is data read at a time, due for writing at due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst with the delay; when either side ends, both are
// closed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	queue := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range queue {
			if wait := time.Until(c.due); wait > 0 {
				time.Sleep(wait)
			}
			if _, err := dst.Write(c.data); err != nil {
				_ = src.Close()
				for range queue {
				}
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			queue <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(time.Duration(p.delay.Load()))}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				_ = dst.Close()
			}
			break
		}
	}
	close(queue)
	<-done
	_ = dst.Close()
	p.mu.Lock()
	delete(p.conns, src)
	p.mu.Unlock()
}
