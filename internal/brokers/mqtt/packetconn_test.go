package mqtt

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/eclipse/paho.golang/packets"
)

// recordingConn is a net.Conn that keeps every Write apart, as a TLS
// connection sends each one as a record of its own.
type recordingConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
	err    error // returned by every Write when set
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

// TestPacketConnWritesAPacketAtOnce: paho writes a packet's fixed header,
// variable header and payload as separate buffers; through packetConn
// each packet reaches the connection in one Write, whole.
func TestPacketConnWritesAPacketAtOnce(t *testing.T) {
	rec := &recordingConn{}
	c := newPacketConn(rec)
	sub := &packets.Subscribe{PacketID: 7, Subscriptions: []packets.SubOptions{{Topic: "$SYS/broker/version"}, {Topic: "brokerbench/marker/1"}}, Properties: &packets.Properties{}}
	pub := &packets.Publish{Topic: "t", QoS: 1, PacketID: 8, Payload: bytes.Repeat([]byte("x"), 300), Properties: &packets.Properties{}}
	var want [][]byte
	for _, w := range []func(*bytes.Buffer){
		func(b *bytes.Buffer) { _, _ = sub.WriteTo(b) },
		func(b *bytes.Buffer) { _, _ = pub.WriteTo(b) },
	} {
		var b bytes.Buffer
		w(&b)
		want = append(want, b.Bytes())
	}
	if _, err := sub.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 2 {
		t.Fatalf("the connection got %d writes for 2 packets", len(rec.writes))
	}
	for i := range want {
		if !bytes.Equal(rec.writes[i], want[i]) {
			t.Errorf("write %d is %x, want packet %x", i, rec.writes[i], want[i])
		}
	}
	// Without packetConn, the same SUBSCRIBE reaches a connection that is
	// not a net.TCPConn as several writes: what packetConn is for.
	bare := &recordingConn{}
	if _, err := sub.WriteTo(bare); err != nil {
		t.Fatal(err)
	}
	if len(bare.writes) < 2 {
		t.Errorf("paho wrote a SUBSCRIBE in %d write; the test no longer shows the split", len(bare.writes))
	}
}

// TestPacketConnSerializesWriters: packets written from several
// goroutines at once reach the connection whole, each in one Write.
func TestPacketConnSerializesWriters(t *testing.T) {
	rec := &recordingConn{}
	c := newPacketConn(rec)
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := &packets.Publish{Topic: "t", QoS: 1, PacketID: uint16(w*each + i + 1), Payload: bytes.Repeat([]byte{byte(w)}, 50+i), Properties: &packets.Properties{}}
				if _, err := p.WriteTo(c); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(rec.writes) != writers*each {
		t.Fatalf("%d writes for %d packets", len(rec.writes), writers*each)
	}
	for i, w := range rec.writes {
		cp, err := packets.ReadPacket(bytes.NewReader(w))
		if err != nil {
			t.Fatalf("write %d is no whole packet: %v", i, err)
		}
		p := cp.Content.(*packets.Publish)
		if len(p.Payload) == 0 || bytes.Count(p.Payload, p.Payload[:1]) != len(p.Payload) {
			t.Fatalf("write %d mixes two writers' bytes", i)
		}
	}
}

// TestPacketConnErrors: the connection's error is the error of the Write
// that completed the packet, and a fixed header whose length runs past 4
// bytes is refused.
func TestPacketConnErrors(t *testing.T) {
	broken := errors.New("connection reset")
	c := newPacketConn(&recordingConn{err: broken})
	if n, err := c.Write([]byte{0x30, 3}); err != nil || n != 2 {
		t.Fatalf("an incomplete packet: %d, %v; want 2, nil (nothing written yet)", n, err)
	}
	if _, err := c.Write([]byte("abc")); !errors.Is(err, broken) {
		t.Fatalf("the Write that completes the packet: %v, want %v", err, broken)
	}
	if _, err := c.Write([]byte{0x30, 0x80, 0x80, 0x80, 0x80, 1}); !errors.Is(err, errPacketLength) {
		t.Fatalf("a 5-byte remaining length: %v, want %v", err, errPacketLength)
	}
}

// FuzzPacketConn: bytes written in any pieces come out unchanged, and
// every Write of the connection under it is one whole packet (the last
// pieces may still be collecting).
func FuzzPacketConn(f *testing.F) {
	f.Add([]byte{0x82, 5, 0, 1, 0, 0, 0, 0x30, 2, 'a', 'b'}, uint8(3))
	f.Add([]byte{0xc0, 0}, uint8(1))
	f.Add([]byte{0x30, 0xff, 0x01}, uint8(2))
	f.Add([]byte{0x30, 0x80, 0x80, 0x80, 0x80, 1}, uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		rec := &recordingConn{}
		c := newPacketConn(rec)
		step := int(piece%16) + 1
		var failed error
		for i := 0; i < len(stream) && failed == nil; i += step {
			_, failed = c.Write(stream[i:min(i+step, len(stream))])
		}
		var out []byte
		for i, w := range rec.writes {
			n, err := packetLength(w)
			if err != nil || n != len(w) {
				t.Fatalf("write %d (%x) is not one whole packet: length %d, %v", i, w, n, err)
			}
			out = append(out, w...)
		}
		out = append(out, c.pending...)
		if failed != nil {
			if !errors.Is(failed, errPacketLength) {
				t.Fatalf("unexpected error %v", failed)
			}
			return
		}
		if !bytes.Equal(out, stream) {
			t.Fatalf("wrote %x, then %x collecting; want %x", out[:len(out)-len(c.pending)], c.pending, stream)
		}
	})
}
