package results

import (
	"encoding/json"
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// FuzzDecode: any content either decodes to a run a report can read (it
// has a workload) or gives an error; it never panics.
func FuzzDecode(f *testing.F) {
	full, _ := json.Marshal(&Run{Schema: Schema, ID: "x", Workload: &workload.Workload{Name: "w", MessageSize: 100}})
	for _, s := range []string{`{"schema":"brokerbench/results/v1"}`, `{}`, `[]`, `null`, string(full),
		`{"schema":"brokerbench/results/v1","workload":{"messageSize":-1}}`,
		`{"schema":"brokerbench/results/v1","workload":{},"intervals":[{"phase":"measure"}],"counts":{"storedByBroker":null}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode("fuzz.json", data)
		if err == nil && r.Workload == nil {
			t.Fatal("decoded a run without a workload")
		}
		if err == nil {
			_ = Judge(r)
			_ = OMB(r)
		}
	})
}
