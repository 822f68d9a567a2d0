package history

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// FuzzFromOMB feeds the OMB result reader arbitrary content: it returns a
// record whose every figure is finite and that the store can encode, or
// an error, and never panics.
func FuzzFromOMB(f *testing.F) {
	if data, err := os.ReadFile("testdata/omb-kafka.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"workload":"w","driver":"d","publishRate":[1e308,1e308]}`))
	f.Add([]byte(`{"workload":"w","driver":"d","publishRate":[1],"messageSize":-1}`))
	f.Add([]byte(`{"workload":null,"driver":"d","publishRate":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := FromOMB(data, "omb.json", time.Unix(0, 0))
		if err != nil {
			return
		}
		if r.ID == "" || r.Benchmark == "" {
			t.Fatalf("record without an id or a benchmark: %+v", r)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("the record does not encode: %v", err)
		}
	})
}
