package report

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/results"
)

// FuzzModel: whatever a results file holds, once it decodes, the report's
// tables are built without a panic.
func FuzzModel(f *testing.F) {
	for _, s := range []string{
		`{"schema":"brokerbench/results/v1","workload":{}}`,
		`{"schema":"brokerbench/results/v1","workload":{"name":"w","messageSize":100},"intervals":[{"phase":"measure","end":1}],"backlog":{},"maxRateSearch":{},"price":{"nodes":0},"study":{"params":[{"name":"rate"}]}}`,
		`{"schema":"brokerbench/results/v1","workload":{"messageSize":0},"measured":{"durationSeconds":0,"system":{}},"counts":{"subscriptions":[{}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := results.Decode("fuzz.json", data)
		if err != nil {
			return
		}
		in := &Input{Title: "fuzz", Groups: []*Group{{Label: "g", Runs: []*results.Run{r}}}}
		if _, err := in.SummaryTable(); err != nil {
			return
		}
		_ = in.AccountingTable()
		_ = in.BacklogTable()
		_, _ = Compare(in, in)
	})
}
