package results

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	stored := func(n int64) *int64 { return &n }
	cases := []struct {
		name string
		run  Run
		kind VerdictKind
		want string // in the reason
	}{
		// A clean run.
		{"ok", Run{Counts: Counts{Sent: 100, Acked: 100, Consumed: 100}}, OK, ""},
		// A consume-only run sends nothing and is not a failure.
		{"consume only", Run{Counts: Counts{Consumed: 100}}, OK, ""},
		// Every send failed: the run measured errors, not the broker.
		{"all failed", Run{Counts: Counts{Sent: 4, Failed: 4, FailedByKind: map[string]int64{"MESSAGE_TOO_LARGE": 4}}}, Failed, "MESSAGE_TOO_LARGE=4"},
		// Nothing acknowledged, nothing failed yet (all unacked).
		{"none acked", Run{Counts: Counts{Sent: 10, Unacked: 10}}, Failed, "no message was acknowledged"},
		// More than MaxFailedShare of the sends failed.
		{"too many failed", Run{Counts: Counts{Sent: 1000, Acked: 980, Failed: 20, FailedByKind: map[string]int64{"timeout": 20}}}, Failed, "20 of 1000 sends failed"},
		// Within the share: the run stands.
		{"few failed", Run{Counts: Counts{Sent: 1000, Acked: 995, Failed: 5}}, OK, ""},
		// Interrupted wins over everything else.
		{"interrupted", Run{Partial: true, PartialReason: "interrupt", Counts: Counts{Sent: 4, Failed: 4}}, Interrupted, "interrupt"},
		{"lost", Run{Counts: Counts{Sent: 10, Acked: 10, Lost: 2}}, AccountingMismatch, "2 acknowledged messages were lost"},
		// A read-committed consumer that received an aborted message
		// breaks the transactions' guarantee, lost messages or not.
		{"aborted read", Run{Counts: Counts{Sent: 10, Acked: 10, AbortedRead: 1, Lost: 1}}, AccountingMismatch, "1 messages of aborted transactions reached consumers"},
		// Missing messages the broker could not be read again for: still
		// a mismatch (exit 5), but the reason says the loss is unconfirmed
		// and why.
		{"unconfirmed loss", Run{Counts: Counts{Sent: 10, Acked: 10, UnconfirmedLoss: 1, Subscriptions: []SubscriptionCounts{
			{Name: "s0", UnconfirmedLoss: 1, Reread: &Reread{Missing: 1, Error: "the re-read did not finish within 2m0s"}}}}},
			AccountingMismatch, "unconfirmed loss: 1 acknowledged messages were never delivered, and the broker could not be read again to show whether it still holds them (the re-read did not finish within 2m0s)"},
		// A proven loss is named first, the unconfirmed rest after it.
		{"lost and unconfirmed", Run{Counts: Counts{Sent: 10, Acked: 10, Lost: 1, UnconfirmedLoss: 2, Subscriptions: []SubscriptionCounts{
			{Name: "s0", Lost: 1, Reread: &Reread{Missing: 1, Complete: true}},
			{Name: "s1", UnconfirmedLoss: 2, Reread: &Reread{Missing: 2, Error: "the driver cannot read the broker again"}}}}},
			AccountingMismatch, "1 acknowledged messages were lost: never delivered, and not in the broker when it was read again after the drain; 2 more are an unconfirmed loss (the driver cannot read the broker again)"},
		// Messages found on the re-read were delivered late: not a loss.
		{"delivered late", Run{Counts: Counts{Sent: 10, Acked: 10, Consumed: 9, DeliveredLate: 1}}, OK, ""},
		{"stored differs", Run{Counts: Counts{Sent: 10, Acked: 10, StoredByBroker: stored(9)}}, AccountingMismatch, "stores 9"},
		{"target missed", Run{Counts: Counts{Sent: 10, Acked: 10}, Target: &Target{Held: false, Reason: "late"}}, TargetNotHeld, "late"},
		{"load generator", Run{Counts: Counts{Sent: 10, Acked: 10}, Target: &Target{Held: false, LoadGeneratorBound: true, Limit: "the load generator's CPU: saturated"}}, LoadGeneratorBound, "saturated"},
		// Lost messages outrank the load generator's limit.
		{"lost beats load generator", Run{Counts: Counts{Sent: 10, Acked: 10, Lost: 1}, Target: &Target{Held: false, LoadGeneratorBound: true}}, AccountingMismatch, "1 acknowledged"},
		// With faults, failed sends and a missed target are findings.
		{"faults: target missed", Run{Counts: Counts{Sent: 100, Acked: 80, Failed: 20}, Faults: []FaultEvent{{Action: "kill leader"}}, Target: &Target{Held: false, LoadGeneratorBound: true}}, OK, ""},
		{"faults: lost", Run{Counts: Counts{Sent: 100, Acked: 100, Lost: 3}, Faults: []FaultEvent{{Action: "kill leader"}}}, AccountingMismatch, "3 acknowledged"},
		{"faults: nothing acked", Run{Counts: Counts{Sent: 100, Failed: 100}, Faults: []FaultEvent{{Action: "kill leader"}}}, Failed, "no message"},
		{"search found nothing", Run{Counts: Counts{Sent: 10, Acked: 10}, MaxRate: &MaxRateSearch{}}, TargetNotHeld, "no rate"},
		// Other processes took 1.4 of 2 cores: the machine was disturbed,
		// whether or not the target held, and the load generator is not
		// blamed.
		{"disturbed", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{System: &System{OtherCPU: 140, Cores: 2}}, Target: &Target{Held: false, Reason: "late", LoadGeneratorBound: true}}, Disturbed, "other processes used 1.4 of 2 cores during the measurement; the figures describe a shared machine, not the broker (target rate not held: late)"},
		{"disturbed, target held", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{System: &System{OtherCPU: 60, Cores: 2}}, Target: &Target{Held: true}}, Disturbed, "0.6 of 2 cores"},
		// Steal counts as the others': 30% of 2 cores is 0.6 of a core.
		{"stolen", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{System: &System{CPUSteal: 30, Cores: 2}}}, Disturbed, "stolen by its hypervisor"},
		// A quiet machine's kernel and daemons do not disturb it.
		{"quiet", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{System: &System{OtherCPU: 15, Cores: 2}}}, OK, ""},
		// A quarter of 16 cores: 3 cores of others disturb less than 4.
		{"big machine", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{System: &System{OtherCPU: 300, Cores: 16}}}, OK, ""},
		// Lost messages outrank a disturbed machine.
		{"lost beats disturbed", Run{Counts: Counts{Sent: 10, Acked: 10, Lost: 1}, Measured: Aggregate{System: &System{OtherCPU: 140, Cores: 2}}}, AccountingMismatch, "1 acknowledged"},
		{"search not measurable", Run{Counts: Counts{Sent: 10, Acked: 10}, MaxRate: &MaxRateSearch{NotMeasurable: "machine disturbed"}}, Disturbed, "not measurable: machine disturbed"},
		{"consumers behind", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{ConsumersBehind: "the consumers fell behind"}}, ConsumerBound, "fell behind"},
		// A missed target names its limit.
		{"target missed, limit", Run{Counts: Counts{Sent: 10, Acked: 10}, Target: &Target{Held: false, Reason: "late", Limit: "the broker: an outage"}}, TargetNotHeld, "late; limited by the broker: an outage"},
		// A local node that stopped during the run is the broker's
		// failure, whatever else the run met: it outranks a disturbed
		// machine and the outage it caused.
		{"node stopped", Run{BrokerStopped: []string{"kafka node 2 (127.0.1.2, pid 7) was ended by signal 9 (killed) from outside"}, Counts: Counts{Sent: 10, Acked: 10},
			Measured: Aggregate{System: &System{OtherCPU: 140, Cores: 2}}, Target: &Target{Held: false, Reason: "late", Limit: "the broker: an outage"}},
			Failed, "the broker stopped during the run, and no fault of the workload stopped it: kafka node 2 (127.0.1.2, pid 7) was ended by signal 9"},
		// A disturbed machine still names what limited the missed target.
		{"disturbed, limit named", Run{Counts: Counts{Sent: 10, Acked: 10}, Measured: Aggregate{System: &System{OtherCPU: 140, Cores: 2}},
			Target: &Target{Held: false, Reason: "late", Limit: "the broker: an outage, no acknowledgement for 40.0 s"}}, Disturbed, "(target rate not held: late; limited by the broker: an outage, no acknowledgement for 40.0 s)"},
		// A failed run is reported as failed even if its target was missed.
		{"failed beats target", Run{Counts: Counts{Sent: 10, Failed: 10}, Target: &Target{Held: false}}, Failed, "no message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(&tc.run)
			if v.Kind != tc.kind || !strings.Contains(v.Reason, tc.want) || (tc.kind == OK) != (v.Reason == "") {
				t.Errorf("Judge = %+v, want kind %d with %q", v, tc.kind, tc.want)
			}
		})
	}
}

// TestStoredExplained: the broker may hold every acknowledged message and
// some failed ones; fewer than acknowledged is loss, more than were sent
// is duplication.
func TestStoredExplained(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		stored *int64
		want   bool
	}{
		{nil, true},
		{n(1000), true},  // exactly the acknowledged
		{n(1003), true},  // 3 failed sends stored anyway
		{n(1010), true},  // every failed send stored
		{n(999), false},  // an acknowledged message missing
		{n(1011), false}, // more than were sent
	} {
		c := Counts{Sent: 1010, Acked: 1000, Failed: 10, StoredByBroker: tc.stored}
		if got := c.StoredExplained(); got != tc.want {
			t.Errorf("stored %v of 1000 acked, 10 failed: StoredExplained = %v, want %v", tc.stored, got, tc.want)
		}
		if v := Judge(&Run{Counts: c}); (v.Kind == AccountingMismatch) == tc.want {
			t.Errorf("stored %v: verdict %v", tc.stored, v)
		}
	}
}
