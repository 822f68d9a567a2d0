package brokers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// ErrUnsupported is wrapped by the errors of Check and CheckLocal: the
// runs ask for something the broker's module declares it cannot do.
// Such errors also wrap workload.ErrInvalid, as they are the input's.
var ErrUnsupported = errors.New("not supported by the broker")

// Capability names, as the errors of Check and CheckLocal give them.
const (
	CapPartitions   = "partitions"
	CapReplication  = "replication"
	CapReplay       = "replay"
	CapAcks         = "acks"
	CapTransactions = "transactions"
	CapLocal        = "local cluster"
	CapLocalNodes   = "local nodes"
	CapLinks        = "links"
	CapLeader       = "leader"
)

// UnsupportedError is a run's need that the broker's module declares it
// cannot meet.
type UnsupportedError struct {
	// Broker is the driver's name; Capability the missing one (CapLinks).
	Broker, Capability string
	// File and Field locate the need in the input, when it comes from a
	// file's field.
	File, Field string
	// Msg says what was asked, why the broker cannot, and what to do.
	Msg string
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	fmt.Fprintf(&b, "the %s broker has no %q capability: %s", e.Broker, e.Capability, e.Msg)
	return b.String()
}

// Is makes the error match ErrUnsupported and workload.ErrInvalid.
func (e *UnsupportedError) Is(target error) bool {
	return target == ErrUnsupported || target == workload.ErrInvalid
}

// Need is what runs ask of a broker, to be checked before anything
// starts.
type Need struct {
	// Workload is the workload run.
	Workload *workload.Workload
	// Driver is the driver config, for settings a capability governs
	// (acks).
	Driver *workload.DriverConfig
	// Existing says the runs read topics they did not create (--topic).
	Existing bool
}

// Check returns the input errors of running n on the broker whose
// driver is called name: each names the capability its module declares
// missing. An unknown name is an error wrapping ErrUnknownDriver.
func Check(name string, n Need) error {
	m, ok := Lookup(name)
	if !ok {
		return UnknownDriver(&workload.DriverConfig{Name: name, Source: n.Workload.Source})
	}
	c, w := m.Capabilities, n.Workload
	missing := func(capability, field, format string, args ...any) error {
		return &UnsupportedError{Broker: name, Capability: capability, File: w.Source, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var errs []error
	if !c.Partitions && w.PartitionsPerTopic > 1 {
		errs = append(errs, missing(CapPartitions, "partitionsPerTopic",
			"%d partitions asked; its topics have one lane of order each: use more topics instead", w.PartitionsPerTopic))
	}
	if !c.Replication && w.ReplicationFactor > 1 {
		errs = append(errs, missing(CapReplication, "replicationFactor",
			"replication factor %d asked; it does not replicate topics", w.ReplicationFactor))
	}
	if !c.Replay && n.Existing && w.Producers() == 0 && w.Consumers() > 0 {
		errs = append(errs, missing(CapReplay, "",
			"a consume-only run reads what existing topics hold, and its consumers receive only the messages sent after they subscribed: give the workload producers"))
	}
	if t := w.Transactions; t != nil && !c.Transactions {
		errs = append(errs, missing(CapTransactions, "transactionSize",
			"transactions of %d messages asked; brokerbench's driver of it has none (its producers do not commit or abort a group of messages, nor do its consumers leave out aborted ones): run the workload without the transaction fields", t.Size))
	}
	for _, f := range w.Faults {
		if m.NoLeader != "" && (f.Node == workload.NodeLeader || f.Node == workload.NodeController) {
			errs = append(errs, &UnsupportedError{Broker: name, Capability: CapLeader, File: fmt.Sprintf("%s:%d", w.Source, f.Line), Field: "faults",
				Msg: fmt.Sprintf("the fault aims at the %s, and %s", f.Node, m.NoLeader)})
		}
	}
	if n.Driver != nil {
		if acks, ok := n.Driver.Producer.Get("acks"); ok && len(c.AcksLevels) > 0 && !slices.Contains(c.AcksLevels, acks) {
			errs = append(errs, &UnsupportedError{Broker: name, Capability: CapAcks, File: n.Driver.Source, Field: "producerConfig.acks",
				Msg: fmt.Sprintf("acks %q asked; its producers choose among %s", acks, strings.Join(c.AcksLevels, ", "))})
		}
	}
	return errors.Join(errs...)
}

// CheckLocal returns an error naming the capability missing when a local
// cluster of the broker whose driver is called name cannot have nodes
// broker nodes, or carry its links through the link proxy when links is
// set; why says who asks for the nodes ("--local-brokers 3").
func CheckLocal(name string, nodes int, why string, links bool) error {
	m, ok := Lookup(name)
	if !ok {
		return UnknownDriver(&workload.DriverConfig{Name: name})
	}
	if m.Local == nil {
		return &UnsupportedError{Broker: name, Capability: CapLocal, Msg: m.NoLocal}
	}
	return m.Local.check(name, nodes, why, links)
}

// CheckKind is CheckLocal for a kind of local cluster named on the
// command line ('local up KIND'). An unknown kind is left to NewLocal.
func CheckKind(kind string, nodes int, why string, links bool) error {
	mu.RLock()
	l, ok := kinds[kind]
	mu.RUnlock()
	if !ok {
		return nil
	}
	return l.check(kind, nodes, why, links)
}

// check is CheckLocal's for the kind l of the broker called name.
func (l *Local) check(name string, nodes int, why string, links bool) error {
	switch {
	case nodes > l.MaxNodes:
		return &UnsupportedError{Broker: name, Capability: CapLocalNodes,
			Msg: fmt.Sprintf("%s asks for %d nodes, and a local %s cluster has at most %d: give fewer, or run against a cluster of your own with --broker", why, nodes, l.Kind, l.MaxNodes)}
	case links && l.NoLinks != "":
		return &UnsupportedError{Broker: name, Capability: CapLinks,
			Msg: fmt.Sprintf("links through the link proxy (--links, link faults, a setup's network) were asked for, and %s", l.NoLinks)}
	}
	return nil
}
