package results

import (
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestSummaryOfASearchNotMeasurable: a search that found a rate and then
// met a disturbed machine (its repeat failed) gives the rate and says
// what could not be measured beyond it; one that found none says it was
// not measurable, never "no rate sustained".
func TestSummaryOfASearchNotMeasurable(t *testing.T) {
	w := &workload.Workload{Name: "w", Topics: 1, PartitionsPerTopic: 1, MessageSize: 100, ProducersPerTopic: 1}
	const why = "the step at 5512 msg/s failed on a machine disturbed by other processes"
	for _, tc := range []struct {
		name      string
		mr        MaxRateSearch
		want, not []string
	}{
		{"found, then disturbed", MaxRateSearch{Rate: 5512, Ceiling: 22046, NotMeasurable: why},
			[]string{"MAX SUSTAINABLE RATE: 5512 msg/s", "NOT MEASURABLE beyond it: " + why}, []string{"NO RATE SUSTAINED"}},
		{"disturbed at once", MaxRateSearch{Ceiling: 22046, NotMeasurable: why},
			[]string{"NOT MEASURABLE: " + why}, []string{"MAX SUSTAINABLE RATE", "NO RATE SUSTAINED"}},
		{"none held", MaxRateSearch{Ceiling: 22046},
			[]string{"NO RATE SUSTAINED"}, []string{"MAX SUSTAINABLE RATE", "NOT MEASURABLE"}},
	} {
		var out strings.Builder
		PrintSummary(&out, &Run{Workload: w, MaxRate: &tc.mr})
		for _, s := range tc.want {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%s: summary lacks %q:\n%s", tc.name, s, out.String())
			}
		}
		for _, s := range tc.not {
			if strings.Contains(out.String(), s) {
				t.Errorf("%s: summary says %q:\n%s", tc.name, s, out.String())
			}
		}
	}
}
