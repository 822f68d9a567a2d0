package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The V2 encoding's cookies (hdrhistogram-go's, and every
// implementation's): the plain one opens the compressed payload, the
// compressed one the whole. Decode accepts what Counts.Encode writes.
const (
	v2Cookie           = hdrhistogram.V2EncodingCookieBase | 0x10
	v2CompressedCookie = hdrhistogram.V2CompressedEncodingCookieBase | 0x10
	v2HeaderLen        = 40
	// v2MaxZigZag bounds the zigzag values AppendUvarint writes as the
	// format's LEB128-64b9B does: up to 8 bytes of 7 bits agree.
	v2MaxZigZag = 1 << 56
)

// compressors are the zlib writers Counts.Encode reuses: hdrhistogram-go
// makes one at its best compression for every histogram it encodes, which
// cost a run 3% of its CPU at 150,000 msg/s, encoding each interval's
// histograms for the journal.
var compressors = sync.Pool{New: func() any { return zlib.NewWriter(nil) }}

// Encode returns c in HdrHistogram's compressed, base64-encoded V2
// format, as Encode(c.Histogram()) does and readable by every
// HdrHistogram implementation, without making that histogram: only the
// range of counts touched is walked, and the compressor is reused.
func (c *Counts) Encode() (string, error) {
	limit := c.hi + 1 // the counts up to the largest value's, as hdrhistogram-go writes them
	if limit == 0 {
		limit = 1
	}
	payload := make([]byte, v2HeaderLen, v2HeaderLen+2*(limit-min(c.lo, limit))+16)
	for i := 0; i < limit; {
		n := c.counts[i]
		i++
		if n == 0 {
			zeros := int64(1)
			for i < limit && c.counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				n = -zeros // a run of zero counts
			}
		}
		zz := uint64(n<<1) ^ uint64(n>>63)
		if zz >= v2MaxZigZag {
			return Encode(c.Histogram())
		}
		payload = binary.AppendUvarint(payload, zz)
	}
	be := binary.BigEndian
	be.PutUint32(payload[0:], uint32(v2Cookie))
	be.PutUint32(payload[4:], uint32(len(payload)-v2HeaderLen))
	be.PutUint32(payload[8:], 0) // normalizing index offset
	be.PutUint32(payload[12:], SignificantDigits)
	be.PutUint64(payload[16:], 1) // lowest discernible value
	be.PutUint64(payload[24:], uint64(HighestMicros))
	be.PutUint64(payload[32:], math.Float64bits(1)) // integer to double ratio

	var out bytes.Buffer
	out.Write(make([]byte, 8)) // cookie and compressed length, below
	w := compressors.Get().(*zlib.Writer)
	defer compressors.Put(w)
	w.Reset(&out)
	if _, err := w.Write(payload); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	b := out.Bytes()
	be.PutUint32(b[0:], uint32(v2CompressedCookie))
	be.PutUint32(b[4:], uint32(len(b)-8))
	return base64.StdEncoding.EncodeToString(b), nil
}
