package payload

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRatio measures Ratio per codec on a pool of 100 payloads of
// 200 B, the size of a captured topic's sample.
func BenchmarkRatio(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	pool := make([][]byte, 100)
	for i := range pool {
		pool[i] = make([]byte, 200)
		for j := range pool[i] {
			pool[i][j] = byte('a' + r.IntN(8))
		}
	}
	for _, codec := range Codecs() {
		b.Run(codec, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Ratio(pool, codec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
