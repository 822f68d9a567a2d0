package results

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// MaxFailedShare is the share of sends that may fail before a run counts as
// failed: above it, the figures describe errors rather than the broker.
const MaxFailedShare = 0.01

// VerdictKind classifies a run's outcome; the CLI maps each to an exit code.
type VerdictKind int

// Verdict kinds, from best to worst of the conditions a run can meet. When
// several hold, Judge reports the one listed last in its order of checks.
const (
	OK VerdictKind = iota
	// Failed: the run measured nothing useful (no message acknowledged, or
	// too many sends failed).
	Failed
	// TargetNotHeld: the run completed but missed its rate, or a max-rate
	// search found no sustainable rate.
	TargetNotHeld
	// Interrupted: the run was cut short; its results are partial.
	Interrupted
	// AccountingMismatch: acknowledged messages were lost (proven, or
	// unconfirmed: never delivered, but the broker could not be read
	// again to show them gone), the broker stores a different number
	// than were acknowledged, or messages of aborted transactions reached
	// consumers that read only committed ones.
	AccountingMismatch
	// LoadGeneratorBound: the target was missed because the load generator
	// could not keep its schedule; the run says nothing about the broker's
	// limit.
	LoadGeneratorBound
	// Disturbed: processes other than brokerbench and the broker took so
	// much of the machine (see Disturbance) that the figures describe a
	// shared machine, not the broker.
	Disturbed
	// ConsumerBound: the consumers fell behind through the measurement;
	// end-to-end latency measures a growing queue.
	ConsumerBound
)

// String names the kind as the summary's lines do: "ok", "failed",
// "target not held", "interrupted", "accounting mismatch",
// "load-generator-bound", "disturbed", "consumer-bound".
func (k VerdictKind) String() string {
	names := [...]string{"ok", "failed", "target not held", "interrupted", "accounting mismatch", "load-generator-bound", "disturbed", "consumer-bound"}
	if k < 0 || int(k) >= len(names) {
		return fmt.Sprintf("verdict %d", int(k))
	}
	return names[k]
}

// Verdict is what a run's results say about the run as a whole.
type Verdict struct {
	Kind VerdictKind
	// Reason says why, in words for the user; empty when Kind is OK.
	Reason string
}

// Judge returns the verdict of r. Checks run in order of precedence: an
// interrupted run is partial whatever else holds; a run during which a
// node of the local cluster stopped with no fault to stop it (killed from
// outside, crashed), a run that acknowledged nothing, or one that failed
// more than MaxFailedShare of its sends, failed; then
// messages of aborted transactions read, lost messages, a broker count
// that differs, a max-rate search that found nothing, a machine disturbed by other processes, a target missed because
// of the load generator, a target missed, consumers that fell behind. A
// run with faults measures their cost: failed sends and a missed target
// are findings, and only nothing acknowledged, lost messages, a broker
// count that differs or a disturbed machine fail it.
func Judge(r *Run) Verdict {
	c := r.Counts
	switch {
	case r.Distributed != nil && len(r.Distributed.Failures()) > 0:
		return Verdict{Failed, strings.Join(r.Distributed.Failures(), "; ") + "; the results of the others are written, partial"}
	case r.Partial:
		return Verdict{Interrupted, "run interrupted (" + r.PartialReason + "); partial results written"}
	case len(r.BrokerStopped) > 0:
		return Verdict{Failed, "the broker stopped during the run, and no fault of the workload stopped it: " + strings.Join(r.BrokerStopped, "; ") +
			"; the figures describe a broker that went down"}
	case c.Sent > 0 && c.Acked == 0:
		return Verdict{Failed, fmt.Sprintf("no message was acknowledged: %d sent, %d failed%s", c.Sent, c.Failed, FailureKinds(c))}
	case c.Sent > 0 && float64(c.Failed) > MaxFailedShare*float64(c.Sent) && len(r.Faults) == 0:
		return Verdict{Failed, fmt.Sprintf("%d of %d sends failed (%.1f%%, more than the %.0f%% a valid run may have)%s",
			c.Failed, c.Sent, 100*float64(c.Failed)/float64(c.Sent), 100*MaxFailedShare, FailureKinds(c))}
	case c.AbortedRead > 0:
		return Verdict{AccountingMismatch, fmt.Sprintf("%d messages of aborted transactions reached consumers that read only committed ones", c.AbortedRead)}
	case c.Lost > 0:
		reason := fmt.Sprintf("%d acknowledged messages were lost: never delivered, and not in the broker when it was read again after the drain", c.Lost)
		if c.UnconfirmedLoss > 0 {
			reason += fmt.Sprintf("; %d more are an unconfirmed loss (%s)", c.UnconfirmedLoss, c.RereadErrors())
		}
		return Verdict{AccountingMismatch, reason}
	case c.UnconfirmedLoss > 0:
		return Verdict{AccountingMismatch, fmt.Sprintf("unconfirmed loss: %d acknowledged messages were never delivered, and the broker could not be read again to show whether it still holds them (%s)",
			c.UnconfirmedLoss, c.RereadErrors())}
	case !c.StoredExplained():
		return Verdict{AccountingMismatch, fmt.Sprintf("the broker stores %d messages but %d were acknowledged", *c.StoredByBroker, c.Acked)}
	case r.MaxRate != nil && r.MaxRate.NotMeasurable != "":
		return Verdict{Disturbed, "max-rate search not measurable: " + r.MaxRate.NotMeasurable}
	case r.MaxRate != nil && r.MaxRate.Rate == 0:
		return Verdict{TargetNotHeld, "no rate of the search was sustained; see the steps in the results"}
	case disturbed(r):
		reason := DisturbanceText(r.Measured.System) + " during the measurement; the figures describe a shared machine, not the broker"
		if t := r.Target; t != nil && !t.Held {
			reason += " (target rate not held: " + t.Reason + limitText(t) + ")"
		}
		return Verdict{Disturbed, reason}
	case len(r.Faults) > 0:
		// A run with faults measures what they cost: a missed rate and
		// failed sends are its findings, not its failure.
		return Verdict{OK, ""}
	case r.Target != nil && !r.Target.Held && r.Target.LoadGeneratorBound:
		return Verdict{LoadGeneratorBound, "the load generator was the bottleneck, not the broker: " + r.Target.Limit +
			"; the figures describe this machine's limit (use fewer clients, more producers, or a second machine)"}
	case r.Target != nil && !r.Target.Held:
		return Verdict{TargetNotHeld, "target rate not held: " + r.Target.Reason + limitText(r.Target)}
	case r.Measured.ConsumersBehind != "":
		return Verdict{ConsumerBound, r.Measured.ConsumersBehind}
	}
	return Verdict{OK, ""}
}

// disturbed reports whether other processes disturbed r's measurement. A
// max-rate search judges each step on its own.
func disturbed(r *Run) bool {
	_, d := Disturbance(r.Measured.System)
	return d && r.MaxRate == nil
}

// limitText names what limited a missed target, when it is known.
func limitText(t *Target) string {
	if t.Limit == "" {
		return ""
	}
	return "; limited by " + t.Limit
}

// FailureKinds formats the failures by kind as ": kind=n, kind=n", sorted,
// or "" when there are none.
func FailureKinds(c Counts) string {
	if len(c.FailedByKind) == 0 {
		return ""
	}
	kinds := make([]string, 0, len(c.FailedByKind))
	for k, v := range c.FailedByKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(kinds)
	return ": " + strings.Join(kinds, ", ")
}

// RereadErrors says, once each, why the subscriptions with an unconfirmed
// loss could not prove it, joined by "; ".
func (c Counts) RereadErrors() string {
	var errs []string
	for _, sc := range c.Subscriptions {
		if sc.UnconfirmedLoss == 0 {
			continue
		}
		e := "no re-read"
		if sc.Reread != nil && sc.Reread.Error != "" {
			e = sc.Reread.Error
		}
		if !slices.Contains(errs, e) {
			errs = append(errs, e)
		}
	}
	return strings.Join(errs, "; ")
}

// StoredExplained reports whether the broker's own count agrees with the
// producers' outcomes: it holds every acknowledged message, and beyond
// those at most the sends that failed (a producer can see an error, such
// as a timeout, for a message the broker had written). Without the
// broker's count there is nothing to disagree with.
func (c Counts) StoredExplained() bool {
	if c.StoredByBroker == nil {
		return true
	}
	s := *c.StoredByBroker
	return s >= c.Acked && s <= c.Acked+c.Failed
}

// Failures names the workers that failed or were lost, and why.
func (d *Distribution) Failures() []string {
	var out []string
	for _, w := range d.Workers {
		if w.Error != "" {
			out = append(out, fmt.Sprintf("worker %s %s", w.Address, w.Error))
		}
	}
	return out
}
