// Package payload builds message values: a fixed-size binary header that
// identifies and timestamps each message, followed by pre-generated payload
// bytes.
package payload

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderSize is the number of bytes the header occupies at the start of every
// message value. Workloads must use messages at least this large.
const HeaderSize = 22

const (
	magic   = 0xB7
	version = 1
)

// Header is the per-message metadata brokerbench writes in front of the
// payload.
type Header struct {
	// ProducerID identifies the producer within one run.
	ProducerID uint32
	// Seq is the producer's sequence number, starting at 0 and increasing by
	// one per message the producer attempted to send.
	Seq uint64
	// SendTime is the intended send time in nanoseconds (see package clock).
	SendTime int64
}

// ErrNotBrokerbench reports a value that does not start with a brokerbench
// header (too short, wrong magic byte or unknown version).
var ErrNotBrokerbench = errors.New("value does not carry a brokerbench header")

// Put writes h into the first HeaderSize bytes of dst. It panics if dst is
// shorter than HeaderSize; callers size buffers from validated workloads.
func Put(dst []byte, h Header) {
	_ = dst[HeaderSize-1]
	dst[0] = magic
	dst[1] = version
	binary.LittleEndian.PutUint32(dst[2:6], h.ProducerID)
	binary.LittleEndian.PutUint64(dst[6:14], h.Seq)
	binary.LittleEndian.PutUint64(dst[14:22], uint64(h.SendTime))
}

// Parse decodes the header at the start of src. It returns ErrNotBrokerbench
// (wrapped with the reason) if src does not start with a valid header.
func Parse(src []byte) (Header, error) {
	if len(src) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, need at least %d", ErrNotBrokerbench, len(src), HeaderSize)
	}
	if src[0] != magic {
		return Header{}, fmt.Errorf("%w: magic byte 0x%02x", ErrNotBrokerbench, src[0])
	}
	if src[1] != version {
		return Header{}, fmt.Errorf("%w: header version %d, this build reads %d", ErrNotBrokerbench, src[1], version)
	}
	return Header{
		ProducerID: binary.LittleEndian.Uint32(src[2:6]),
		Seq:        binary.LittleEndian.Uint64(src[6:14]),
		SendTime:   int64(binary.LittleEndian.Uint64(src[14:22])),
	}, nil
}
