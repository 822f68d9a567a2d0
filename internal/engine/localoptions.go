package engine

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
)

// LocalOptions describe the local cluster of a broker kind on this
// machine: the one 'local' commands manage, and the one runs use when
// they are given no broker address.
type LocalOptions struct {
	// PortFlag and BrokersFlag name the options of Port and Brokers in
	// messages: "port" or "local-port", "brokers" or "local-brokers".
	PortFlag, BrokersFlag string
	// Kind is the kind of broker: named by the user, or the driver's.
	Kind string
	// Port is the client port; 0: the kind's usual port. PortGiven says
	// the user gave it (a port given as 0 is an error).
	Port      int
	PortGiven bool
	StateDir  string
	// HeapMB is each broker's JVM heap; 0: the kind's default for the
	// cluster's size.
	HeapMB int
	// Brokers is the number of brokers; 0 with BrokersFlag
	// "local-brokers" and BrokersGiven false lets the workload say.
	Brokers      int
	BrokersGiven bool
	Controllers  int
	// Links routes the cluster's connections through the link proxy.
	Links bool
	// Replace lets a cluster of another shape be replaced, deleting its
	// data, whoever started it.
	Replace bool
	// Security lists the client listeners the brokers serve.
	Security []string
	// Version is the broker release to run; empty: the kind's own.
	Version string
}

// DefaultLocalOptions are the options of the 'local' commands the user
// says nothing about: one broker of the kind's usual port.
func DefaultLocalOptions() LocalOptions {
	return LocalOptions{PortFlag: "port", BrokersFlag: "brokers", Brokers: 1}
}

// localTarget are the options of the local cluster that commands use when
// no broker address is given: brokers of them (0: as the workload needs).
func localTarget(brokers int) LocalOptions {
	return LocalOptions{PortFlag: "local-port", BrokersFlag: "local-brokers", Brokers: brokers}
}

// Validate checks the options.
func (o *LocalOptions) Validate() error {
	var errs []error
	if o.PortGiven && (o.Port < 1 || o.Port > 65535) || o.Port < 0 || o.Port > 65535 {
		errs = append(errs, badInputf("--%s: must be between 1 and 65535, got %d", o.PortFlag, o.Port))
	}
	if o.HeapMB != 0 && o.HeapMB < 128 {
		errs = append(errs, badInputf("--heap-mb: must be at least 128, got %d", o.HeapMB))
	}
	// --local-brokers left out (0) lets the workload say.
	if inferred := o.Brokers == 0 && o.BrokersFlag == "local-brokers" && !o.BrokersGiven; !inferred && (o.Brokers < 1 || o.Brokers > MaxLocalBrokers) {
		errs = append(errs, badInputf("--%s: must be between 1 and %d on one machine, got %d", o.BrokersFlag, MaxLocalBrokers, o.Brokers))
	}
	if o.Controllers < 0 || o.Controllers > 5 || o.Controllers%2 == 0 && o.Controllers != 0 {
		errs = append(errs, badInputf("--controllers: must be 0 (brokers double as controllers), 1, 3 or 5 (a quorum needs an odd number), got %d", o.Controllers))
	}
	return errors.Join(errs...)
}

// PortAdvice is what to do about err, if the local broker's port is
// taken, naming the option of the command at hand.
func (o *LocalOptions) PortAdvice(err error) string {
	if !errors.Is(err, local.ErrPortInUse) {
		return ""
	}
	return fmt.Sprintf(": stop that process, or choose another port with --%s", o.PortFlag)
}

// downFlags are the flags 'local down KIND' needs to find the cluster.
func (o *LocalOptions) downFlags() string {
	s := " " + o.Kind
	if o.Port != 0 && o.Port != brokers.DefaultPort(o.Kind) {
		s += fmt.Sprintf(" --port %d", o.Port)
	}
	if o.StateDir != "" {
		s += " --state-dir " + o.StateDir
	}
	return s
}

// Cluster returns the local cluster the options describe, logging to
// log.
func (o *LocalOptions) Cluster(log io.Writer) (*local.Cluster, error) {
	c, err := brokers.NewLocal(o.Kind, o.Port, o.Brokers)
	if err != nil {
		return nil, err
	}
	if o.StateDir != "" {
		c.StateDir = o.StateDir
	}
	if o.HeapMB != 0 {
		c.HeapMB = o.HeapMB
	}
	if c.Kind, err = local.WithRelease(c.Kind, o.Version); err != nil {
		return nil, badInputf("--version: %w", err)
	}
	c.Controllers = o.Controllers
	c.Links = o.Links
	if err := brokers.CheckKind(o.Kind, o.Brokers, fmt.Sprintf("--%s %d", o.BrokersFlag, o.Brokers), o.Links); err != nil {
		return nil, &Error{Kind: BadInput, Err: err}
	}
	for _, l := range o.Security {
		c.Listeners = append(c.Listeners, strings.ReplaceAll(strings.ToLower(strings.TrimSpace(l)), "-", "_"))
	}
	if err := c.CheckListeners(); err != nil {
		return nil, badInputf("--security: %w", err)
	}
	c.Log = log
	return c, nil
}
