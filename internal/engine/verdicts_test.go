package engine

import (
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/study"
)

// TestVerdictCounts: a study's verdicts line puts ok first, then the
// others by count, and leaves out runs that measured nothing.
func TestVerdictCounts(t *testing.T) {
	runs := []study.Entry{{Verdict: "target not held"}, {Verdict: "ok"}, {Verdict: "disturbed"}, {Verdict: "disturbed"}, {Status: study.Skipped}, {Verdict: "ok"}}
	if got, want := verdictCounts(runs), "2 ok, 2 disturbed, 1 target not held"; got != want {
		t.Errorf("verdictCounts = %q, want %q", got, want)
	}
	if got := verdictCounts([]study.Entry{{Status: study.Skipped}}); got != "" {
		t.Errorf("no verdicts: %q", got)
	}
}

// TestFaultsNeedLocalSaysWhatToDo: the refusal of a fault schedule names
// what to change for every kind of driver, never an empty setting.
func TestFaultsNeedLocalSaysWhatToDo(t *testing.T) {
	for name, want := range map[string]string{
		"kafka":  "leave out --broker, and give --local-brokers N (the local cluster's addresses then replace bootstrap.servers in the driver config)",
		"memory": "leave out --broker, and give --local-brokers N",
	} {
		if got := faultsNeedLocal(name); !strings.Contains(got, want) || strings.Contains(got, "( ") || strings.Contains(got, "replace  in") {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
