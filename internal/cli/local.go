package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
)

// maxLocalBrokers bounds local clusters: nine 512 MiB brokers fit in 24 GiB
// with room for the load generator; the 2 cores are the real limit.
const maxLocalBrokers = 9

type localFlags struct {
	portFlag    string // "port" or "local-port"
	brokersFlag string // "brokers" or "local-brokers"
	kind        string // the kind of broker: named on the command line, or the driver's
	port        int    // 0: the kind's usual port
	stateDir    string
	heapMB      int // 0: the kind's default for the cluster's size
	brokers     int
	controllers int
	links       bool
	// replace lets a cluster of another shape be replaced, deleting its
	// data, whoever started it (--replace).
	replace bool
	// security lists the client listeners of 'local up' (--security).
	security []string
	// flags are the command's, to tell a port given as 0 from none given.
	flags *pflag.FlagSet
}

func (f *localFlags) register(cmd *cobra.Command) {
	f.portFlag, f.brokersFlag, f.flags = "port", "brokers", cmd.Flags()
	fl := cmd.Flags()
	fl.IntVar(&f.port, "port", 0, "client port of every broker, each on its own loopback address, other ports chosen free (default: the broker's usual port, Kafka 9092)")
	fl.StringVar(&f.stateDir, "state-dir", "", "directory for the cluster's nodes: data, logs, configs, PID files (default: per port, under the brokerbench cache)")
	fl.IntVar(&f.heapMB, "heap-mb", 0, "JVM heap of each broker in MiB (default 1024 for one broker, 512 each in a cluster)")
	fl.IntVar(&f.brokers, "brokers", 1, fmt.Sprintf("number of brokers, 1 to %d: one on 127.0.0.1, or broker i on 127.0.1.i", maxLocalBrokers))
	fl.IntVar(&f.controllers, "controllers", 0, "dedicated KRaft controllers, on 127.0.2.j (0: the first three brokers are also the controllers)")
	fl.StringSliceVar(&f.security, "security", nil, "client listeners the brokers serve, comma-separated, the first on --port and the others on free ports; Kafka: plaintext, ssl, sasl_plaintext, sasl_ssl (certificates and a SCRAM/PLAIN user made for the cluster; 'local status' says where)")
	fl.BoolVar(&f.links, "links", false, "route every connection between nodes, and from clients to nodes, through brokerbench's link proxy, so that workloads can delay, throttle or cut single links (link faults, study setups' network:)")
}

// registerTarget adds --local-port and --replace to a command that runs
// against the local broker when no address is given (run, study, clean).
func (f *localFlags) registerTarget(cmd *cobra.Command) {
	f.portFlag, f.brokersFlag, f.flags = "local-port", "local-brokers", cmd.Flags()
	cmd.Flags().IntVar(&f.port, "local-port", 0, "client port of the local broker used when no broker address is given (default: the broker's usual port, Kafka 9092)")
	cmd.Flags().BoolVar(&f.replace, "replace", false, "replace a local cluster that does not fit the runs even if 'local up' started it, deleting its data (without it, such a cluster is left as it is and the command stops with what to do)")
	f.brokers = 1
}

// registerLocalBrokers adds --local-brokers to run: the size of the local
// cluster (studies take it from each setup).
func (f *localFlags) registerLocalBrokers(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.brokers, "local-brokers", 0, fmt.Sprintf("brokers of the local cluster used when no broker address is given, 1 to %d (default: a running cluster with at least the workload's replication factor of brokers, used as it is; else one of that many, started for the run)", maxLocalBrokers))
	cmd.Flags().BoolVar(&f.links, "local-links", false, "run the local cluster's links through brokerbench's link proxy (implied by link faults in the workload)")
}

// validate checks the local broker flags.
func (f *localFlags) validate() error {
	var errs []error
	if given := f.flags != nil && f.flags.Changed(f.portFlag); given && (f.port < 1 || f.port > 65535) || f.port < 0 || f.port > 65535 {
		errs = append(errs, usageError{fmt.Errorf("--%s: must be between 1 and 65535, got %d", f.portFlag, f.port)})
	}
	if f.heapMB != 0 && f.heapMB < 128 {
		errs = append(errs, usageError{fmt.Errorf("--heap-mb: must be at least 128, got %d", f.heapMB)})
	}
	// --local-brokers left out (0) lets the workload say.
	if inferred := f.brokers == 0 && f.brokersFlag == "local-brokers" && (f.flags == nil || !f.flags.Changed(f.brokersFlag)); !inferred && (f.brokers < 1 || f.brokers > maxLocalBrokers) {
		errs = append(errs, usageError{fmt.Errorf("--%s: must be between 1 and %d on one machine, got %d", f.brokersFlag, maxLocalBrokers, f.brokers)})
	}
	if f.controllers < 0 || f.controllers > 5 || f.controllers%2 == 0 && f.controllers != 0 {
		errs = append(errs, usageError{fmt.Errorf("--controllers: must be 0 (brokers double as controllers), 1, 3 or 5 (a quorum needs an odd number), got %d", f.controllers)})
	}
	return errors.Join(errs...)
}

// portAdvice is what to do about err, if the local broker's port is taken,
// naming the flag of the command at hand.
func (f *localFlags) portAdvice(err error) string {
	if !errors.Is(err, local.ErrPortInUse) {
		return ""
	}
	return fmt.Sprintf(": stop that process, or choose another port with --%s", f.portFlag)
}

// downFlags are the flags 'local down KIND' needs to find the cluster.
func (f *localFlags) downFlags() string {
	s := " " + f.kind
	if f.port != 0 && f.port != brokers.DefaultPort(f.kind) {
		s += fmt.Sprintf(" --port %d", f.port)
	}
	if f.stateDir != "" {
		s += " --state-dir " + f.stateDir
	}
	return s
}

// cluster returns the local cluster the flags describe.
func (f *localFlags) cluster(io IO) (*local.Cluster, error) {
	c, err := brokers.NewLocal(f.kind, f.port, f.brokers)
	if err != nil {
		return nil, err
	}
	if f.stateDir != "" {
		c.StateDir = f.stateDir
	}
	if f.heapMB != 0 {
		c.HeapMB = f.heapMB
	}
	c.Controllers = f.controllers
	c.Links = f.links
	if err := brokers.CheckKind(f.kind, f.brokers, fmt.Sprintf("--%s %d", f.brokersFlag, f.brokers), f.links); err != nil {
		return nil, usageError{err}
	}
	for _, l := range f.security {
		c.Listeners = append(c.Listeners, strings.ReplaceAll(strings.ToLower(strings.TrimSpace(l)), "-", "_"))
	}
	if err := c.CheckListeners(); err != nil {
		return nil, usageError{fmt.Errorf("--security: %w", err)}
	}
	c.Log = io.Err
	return c, nil
}

// printStatus writes a cluster's status, one line per node.
func printStatus(io IO, st local.Status) {
	state := "not running"
	if st.Running {
		state = "running"
	}
	fmt.Fprintf(io.Out, "%s %s: %s, %d node(s), bootstrap %s\n", st.Kind, st.Version, state, len(st.Nodes), strings.Join(st.Bootstrap, ","))
	if len(st.Nodes) > 0 {
		fmt.Fprintf(io.Out, "  %s; %s\n", st.Shape(), local.Origin(st.StartedBy, st.RunPID))
	}
	for _, n := range st.Nodes {
		ports := make([]string, 0, len(n.Ports))
		for name, p := range n.Ports {
			ports = append(ports, fmt.Sprintf("%s %s:%d", name, n.Host, p))
		}
		sort.Strings(ports)
		nodeState := "stopped"
		if n.Running {
			nodeState = fmt.Sprintf("running, pid %d", n.PID)
		}
		fmt.Fprintf(io.Out, "  node %d (%s): %s; %s; log %s\n", n.ID, strings.Join(n.Roles, "+"), nodeState, strings.Join(ports, ", "), n.Log)
	}
	if p := st.LinkProxy; p != nil {
		state := "stopped"
		if p.Running {
			state = fmt.Sprintf("running, pid %d", p.PID)
		}
		fmt.Fprintf(io.Out, "  link proxy: %s; API %s; log %s\n", state, p.Addr("api"), p.Log)
		fmt.Fprintf(io.Out, "  the bootstrap names resolve for clients as: %s\n", formatHosts(st.ClientHosts))
	}
	if len(st.Listeners) > 1 {
		fmt.Fprintf(io.Out, "  listeners: %s on the bootstrap addresses; %s on the ports of their names\n", st.Listeners[0], strings.Join(st.Listeners[1:], ", "))
	} else if st.Security != nil {
		fmt.Fprintf(io.Out, "  listeners: %s on the bootstrap addresses\n", st.Listeners[0])
	}
	if sec := st.Security; sec != nil {
		fmt.Fprintf(io.Out, "  TLS: trust %s (the cluster's own CA); client key store (PEM) %s\n", sec.CAFile, sec.ClientKeyStore)
		fmt.Fprintf(io.Out, "  user %s, password in %s (use it as ${file:%s})\n", sec.Username, sec.PasswordFile, sec.PasswordFile)
	}
	if len(st.Nodes) == 0 {
		fmt.Fprintf(io.Out, "  no cluster recorded in %s\n", st.StateDir)
	}
}

func newLocalCmd(io IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Install, start, stop and inspect brokers on this machine",
		Long: `local manages broker clusters that brokerbench installs and runs on this
machine. Kafka is installed from Maven Central (needs Java 17+ and Maven)
into the brokerbench cache ($BROKERBENCH_CACHE, default ~/.cache/brokerbench)
and runs in KRaft mode: one node on 127.0.0.1, or --brokers N, each broker
on its own loopback address (127.0.1.i), with the first three brokers as
the controller quorum or --controllers dedicated ones. Internal topics are
replicated min(3, N) times. A cluster's nodes share the machine's cores and
disk: on 2 cores and 24 GiB, 9 brokers of 512 MiB start in 35 s and take
3 GiB resident when idle; 3 is what the reference studies use.

NATS (nats) is built from the Go module proxy (needs the Go toolchain) and
runs with JetStream: one server on 127.0.0.1:4222, or --brokers N servers
on 127.0.1.i joined by routes, which replicate streams. Redis (redis) is
Debian's redis-server (installed with apt-get when brokerbench runs as
root), one server on 127.0.0.1:6379 with an append-only file. --controllers,
--heap-mb and --links apply to Kafka only.`,
	}
	var f localFlags
	cluster := func(cmd *cobra.Command, args []string) (*local.Cluster, error) {
		f.flags = cmd.Flags()
		if len(args) != 1 {
			return nil, usageError{fmt.Errorf("name the broker: one of %s", strings.Join(brokers.LocalKinds(), ", "))}
		}
		f.kind = args[0]
		if err := f.validate(); err != nil {
			return nil, err
		}
		c, err := f.cluster(io)
		if err != nil {
			return nil, usageError{err}
		}
		return c, nil
	}
	up := &cobra.Command{
		Use:   "up kafka",
		Short: "Install (if needed) and start a local cluster; wait until every broker serves",
		Long: `up starts a local cluster and waits until every node serves, saying every
few seconds what it waits for. It runs until 'local down'; runs that need
no more than it offers use it as it is and leave it running.

A cluster of the same shape (brokers, controllers, links, listeners)
already recorded is used again: as it is if it runs, else started again
with its data. A cluster of another shape that 'up' started is kept, and
up stops saying what it is, unless --replace is given: replacing it
deletes its data. A cluster a run started and left behind is replaced.`,
		Example: "  brokerbench local up kafka\n  brokerbench local up kafka --brokers 3\n  brokerbench local up nats\n  brokerbench local up redis\n" +
			"  brokerbench local up kafka --brokers 6 --controllers 3 --heap-mb 384 --port 19092\n  brokerbench local up kafka --brokers 3 --replace",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cluster(cmd, args)
			if err != nil {
				return err
			}
			c.StartedBy, c.Replace = local.StartedByUser, f.replace
			st, err := c.Up(cmd.Context())
			var re *local.ReplaceError
			switch {
			case errors.As(err, &re) && re.RunPID != 0:
				return withCode(ExitInvalidInput, fmt.Errorf("%w. Wait for that run to end, or add --replace to this command (that run then fails)", err))
			case errors.As(err, &re):
				return withCode(ExitInvalidInput, fmt.Errorf("%w. To keep it, start it as it is: 'brokerbench local up %s'; to replace it, add --replace to this command",
					err, upFlags(re.Kind, re.StateDir, re.Recorded)))
			}
			if err != nil {
				return fmt.Errorf("%w%s", err, f.portAdvice(err))
			}
			printStatus(io, st)
			return nil
		},
	}
	down := &cobra.Command{
		Use:     "down kafka",
		Short:   "Stop every node of a local cluster by its PID",
		Example: "  brokerbench local down kafka\n  brokerbench local down kafka --port 19092",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cluster(cmd, args)
			if err != nil {
				return err
			}
			return c.Down()
		},
	}
	var asJSON bool
	status := &cobra.Command{
		Use:     "status kafka",
		Short:   "List a local cluster's nodes: roles, addresses, PID, state, log",
		Example: "  brokerbench local status kafka\n  brokerbench local status kafka --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cluster(cmd, args)
			if err != nil {
				return err
			}
			st := c.Status()
			if asJSON {
				b, _ := json.MarshalIndent(st, "", "  ")
				fmt.Fprintln(io.Out, string(b))
				return nil
			}
			printStatus(io, st)
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	up.Flags().BoolVar(&f.replace, "replace", false, "replace a recorded cluster of another shape, running or stopped, deleting its data")
	for _, c := range []*cobra.Command{up, down, status} {
		f.register(c)
		cmd.AddCommand(c)
	}
	cmd.AddCommand(newLinkProxyCmd())
	return cmd
}

// newLinkProxyCmd is the process a local cluster with links starts to
// carry them; users do not run it themselves.
func newLinkProxyCmd() *cobra.Command {
	var linksFile, api string
	cmd := &cobra.Command{
		Use:    "link-proxy --links FILE --api ADDR",
		Short:  "Carry a local cluster's links (started by 'local up --links')",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return local.ServeLinks(linksFile, api)
		},
	}
	cmd.Flags().StringVar(&linksFile, "links", "", "the links, as the cluster wrote them")
	cmd.Flags().StringVar(&api, "api", "", "address of the proxy's control API")
	_ = cmd.MarkFlagRequired("links")
	_ = cmd.MarkFlagRequired("api")
	return cmd
}

// formatHosts lists name -> address pairs, sorted.
func formatHosts(hosts map[string]string) string {
	var pairs []string
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		pairs = append(pairs, name+" -> "+hosts[name])
	}
	return strings.Join(pairs, ", ")
}
