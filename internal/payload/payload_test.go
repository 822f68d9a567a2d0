package payload

import (
	"bytes"
	"compress/flate"
	"errors"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	buf := make([]byte, 100)
	want := Header{ProducerID: 7, Seq: 1<<40 + 3, SendTime: -5}
	Put(buf, want)
	got, err := Parse(buf)
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
}

func TestParseRejects(t *testing.T) {
	good := make([]byte, HeaderSize)
	Put(good, Header{})
	cases := map[string][]byte{
		"short":       good[:HeaderSize-1],
		"bad magic":   append([]byte{0}, good[1:]...),
		"bad version": append([]byte{good[0], 9}, good[2:]...),
	}
	for name, b := range cases {
		if _, err := Parse(b); !errors.Is(err, ErrNotBrokerbench) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestGenerateCompressibility(t *testing.T) {
	ratio := func(random float64) float64 {
		generated, err := Generate(Spec{Size: 4096, RandomRatio: random, PoolSize: 4, Seed: 1})
		pool := generated.Payloads
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		zw, _ := flate.NewWriter(&out, flate.BestSpeed)
		_, _ = zw.Write(pool[0])
		zw.Close()
		return float64(out.Len()) / 4096
	}
	if r := ratio(1); r < 0.95 {
		t.Errorf("random payload compressed to %.2f", r)
	}
	if r := ratio(0); r > 0.05 {
		t.Errorf("zero payload compressed only to %.2f", r)
	}
	if r := ratio(0.5); r < 0.4 || r > 0.6 {
		t.Errorf("half-random payload compressed to %.2f", r)
	}
}

func TestGenerateErrors(t *testing.T) {
	if _, err := Generate(Spec{Size: HeaderSize - 1}); err == nil {
		t.Error("accepted a size below the header")
	}
	if _, err := Generate(Spec{Size: 100, File: "/nonexistent/payload"}); err == nil {
		t.Error("accepted a missing payload file")
	}
	if _, err := Generate(Spec{Size: 100, RandomRatio: 1.5}); err == nil {
		t.Error("accepted a ratio above 1")
	}
}

func TestKeys(t *testing.T) {
	k, err := NewKeys(KeySpec{Mode: RoundRobin}, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := string(k.Next())
	for range DefaultKeyCount - 1 {
		k.Next()
	}
	if string(k.Next()) != first {
		t.Error("round robin did not cycle after DefaultKeyCount keys")
	}
	none, _ := NewKeys(KeySpec{Mode: NoKey}, 1)
	if none.Next() != nil {
		t.Error("NO_KEY gave a key")
	}
	if _, err := NewKeys(KeySpec{Mode: "BOGUS"}, 1); err == nil {
		t.Error("accepted an unknown mode")
	}
}

func FuzzParse(f *testing.F) {
	b := make([]byte, HeaderSize)
	Put(b, Header{ProducerID: 1, Seq: 2, SendTime: 3})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse(data)
		if err != nil {
			return
		}
		again := make([]byte, HeaderSize)
		Put(again, h)
		if !bytes.Equal(again, data[:HeaderSize]) {
			t.Fatalf("re-encoding %x gave %x", data[:HeaderSize], again)
		}
	})
}

func BenchmarkPut(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 100)
	for i := 0; b.Loop(); i++ {
		Put(buf, Header{ProducerID: 1, Seq: uint64(i), SendTime: int64(i)})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 100)
	Put(buf, Header{ProducerID: 1, Seq: 2, SendTime: 3})
	for b.Loop() {
		if _, err := Parse(buf); err != nil {
			b.Fatal(err)
		}
	}
}
