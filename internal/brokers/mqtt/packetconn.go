package mqtt

import (
	"errors"
	"net"
	"sync"
)

// packetConn sends each MQTT packet written to it in one Write of the
// connection under it, and lets one writer at a time write a packet.
//
// paho.golang writes a packet as several buffers (net.Buffers): over
// TCP that is one writev, but a TLS connection sends each buffer as a
// record of its own. Mosquitto 2.0 now and then takes a packet split over
// TLS records for a malformed one and disconnects the client (reason
// 0x81, "malformed packet"); paho then waits for the answer to its
// SUBSCRIBE or PUBLISH until the operation's context ends. On a busy
// machine, where the records of one packet arrive apart, that failed
// about 2 in 100 subscriptions over TLS, and none over plain TCP.
//
// paho holds a connection that is a sync.Locker locked while it writes a
// packet, and so must every other writer (packets.ControlPacket.WriteTo
// does): packetConn collects the bytes of a packet, which its fixed
// header sizes, and writes them at once when the last byte is in. The
// error of that Write is the error of the Write call that completed the
// packet.
type packetConn struct {
	net.Conn
	mu      sync.Mutex
	pending []byte // the packet being collected, held by mu's holder
}

// newPacketConn wraps conn.
func newPacketConn(conn net.Conn) *packetConn { return &packetConn{Conn: conn} }

// Lock is taken by a writer before it writes a packet.
func (c *packetConn) Lock() { c.mu.Lock() }

// Unlock is called by the writer when its packet is written.
func (c *packetConn) Unlock() { c.mu.Unlock() }

// errPacketLength is the error of a fixed header whose remaining length
// does not end within its 4 bytes.
var errPacketLength = errors.New("MQTT packet's remaining length is longer than 4 bytes")

// Write adds p to the packet being collected and writes every packet it
// completes. The caller must hold the lock. It returns len(p) once the
// bytes are collected or written, and the connection's error otherwise.
func (c *packetConn) Write(p []byte) (int, error) {
	c.pending = append(c.pending, p...)
	for {
		n, err := packetLength(c.pending)
		if err != nil {
			c.pending = c.pending[:0]
			return 0, err
		}
		if n == 0 || len(c.pending) < n {
			return len(p), nil
		}
		if _, err := c.Conn.Write(c.pending[:n]); err != nil {
			c.pending = c.pending[:0]
			return 0, err
		}
		c.pending = append(c.pending[:0], c.pending[n:]...)
	}
}

// packetLength returns the length of the MQTT packet b begins with,
// fixed header included, from its fixed header: 0 while b is too short
// to say.
func packetLength(b []byte) (int, error) {
	remaining, shift := 0, 0
	for i := 1; i < len(b); i++ {
		if i > 4 {
			return 0, errPacketLength
		}
		remaining |= int(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return i + 1 + remaining, nil
		}
		shift += 7
	}
	if len(b) > 4 {
		return 0, errPacketLength
	}
	return 0, nil
}
