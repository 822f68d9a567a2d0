package local

import (
	"io"
	"net"
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The link proxy's cost, against a direct loopback connection measured in
// the same run: go test -run '^$' -bench Link ./internal/local. Stream is a
// bulk transfer (replication, produce batches): its MB/s is the most one
// link carries, and CPU spent per MB is what the proxy takes from brokers
// on a small machine. RoundTrip is a 1 KB request answered by 100 B (a
// small produce and its acknowledgement): the latency one proxy hop adds.

// sink accepts connections and discards what they send, answering every
// 1 KB read with 100 bytes when answer is set.
func sink(b *testing.B, answer bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if !answer {
					_, _ = io.Copy(io.Discard, c)
					return
				}
				req, resp := make([]byte, 1024), make([]byte, 100)
				for {
					if _, err := io.ReadFull(c, req); err != nil {
						return
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// viaProxy returns the address of a toxiproxy proxy in front of upstream,
// without toxics, as a cluster's unshaped link.
func viaProxy(b *testing.B, upstream string) string {
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "link", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	return p.Listen
}

func BenchmarkLinkStream(b *testing.B) {
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			addr := sink(b, false)
			if via == "proxy" {
				addr = viaProxy(b, addr)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			chunk := make([]byte, 64<<10)
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				if _, err := c.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLinkRoundTrip(b *testing.B) {
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			addr := sink(b, true)
			if via == "proxy" {
				addr = viaProxy(b, addr)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req, resp := make([]byte, 1024), make([]byte, 100)
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
