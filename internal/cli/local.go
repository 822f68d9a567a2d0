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

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/local"
)

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
		if st.ClientAuth != "" {
			fmt.Fprintf(io.Out, "  clients: %s\n", st.ClientAuth)
		} else {
			fmt.Fprintf(io.Out, "  user %s, password in %s (use it as ${file:%s})\n", sec.Username, sec.PasswordFile, sec.PasswordFile)
		}
	}
	if len(st.Nodes) == 0 {
		fmt.Fprintf(io.Out, "  no cluster recorded in %s\n", st.StateDir)
	}
}

// wrapParagraphs joins paragraphs with a blank line between them, each
// broken at spaces into lines of at most width characters.
func wrapParagraphs(paragraphs []string, width int) string {
	var b strings.Builder
	for i, p := range paragraphs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		line := 0
		for j, word := range strings.Fields(p) {
			if j > 0 && line+1+len(word) > width {
				b.WriteByte('\n')
				line = 0
			} else if j > 0 {
				b.WriteByte(' ')
				line++
			}
			b.WriteString(word)
			line += len(word)
		}
	}
	return b.String()
}

func newLocalCmd(io IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Install, start, stop and inspect brokers on this machine",
		Long: "local manages broker clusters that brokerbench installs and runs on this\n" +
			"machine, one kind per broker:\n\n" + wrapParagraphs(brokers.LocalHelp(), 76),
	}
	f := engine.DefaultLocalOptions()
	cluster := localCluster(io, &f)
	for _, c := range []*cobra.Command{newLocalUpCmd(io, &f, cluster), newLocalDownCmd(cluster), newLocalStatusCmd(io, cluster)} {
		addLocalCluster(c.Flags(), &f)
		cmd.AddCommand(c)
	}
	cmd.AddCommand(newLinkProxyCmd())
	return cmd
}

// clusterOf returns the local cluster a 'local' command's arguments and
// flags name.
type clusterOf func(cmd *cobra.Command, args []string) (*local.Cluster, error)

// localCluster returns the clusterOf of the commands whose flags fill f.
func localCluster(io IO, f *engine.LocalOptions) clusterOf {
	return func(cmd *cobra.Command, args []string) (*local.Cluster, error) {
		given(cmd, f)
		if len(args) != 1 {
			return nil, usageError{fmt.Errorf("name the broker: one of %s", strings.Join(brokers.LocalKinds(), ", "))}
		}
		f.Kind = args[0]
		if err := f.Validate(); err != nil {
			return nil, err
		}
		c, err := f.Cluster(io.Err)
		if err != nil {
			return nil, usageError{err}
		}
		return c, nil
	}
}

func newLocalUpCmd(io IO, f *engine.LocalOptions, cluster clusterOf) *cobra.Command {
	up := &cobra.Command{
		Use:   "up kafka",
		Short: "Install (if needed) and start a local cluster; wait until every broker serves",
		Long: `up starts a local cluster and waits until every node serves, saying every
few seconds what it waits for. It runs until 'local down'; runs that need
no more than it offers use it as it is and leave it running.

A cluster of the same shape (brokers, controllers, links, listeners,
release)
already recorded is used again: as it is if it runs, else started again
with its data. A cluster of another shape that 'up' started is kept, and
up stops saying what it is, unless --replace is given: replacing it
deletes its data. A cluster a run started and left behind is replaced.`,
		Example: "  brokerbench local up kafka\n  brokerbench local up kafka --brokers 3\n  brokerbench local up nats\n  brokerbench local up redis\n  brokerbench local up pulsar\n" +
			"  brokerbench local up kafka --brokers 6 --controllers 3 --heap-mb 384 --port 19092\n  brokerbench local up kafka --brokers 3 --replace",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cluster(cmd, args)
			if err != nil {
				return err
			}
			c.StartedBy, c.Replace = local.StartedByUser, f.Replace
			st, err := c.Up(cmd.Context())
			var re *local.ReplaceError
			switch {
			case errors.As(err, &re) && re.RunPID != 0:
				return usageError{fmt.Errorf("%w. Wait for that run to end, or add --replace to this command (that run then fails)", err)}
			case errors.As(err, &re):
				return usageError{fmt.Errorf("%w. To keep it, start it as it is: 'brokerbench local up %s'; to replace it, add --replace to this command",
					err, engine.UpFlags(re.Kind, re.StateDir, re.Recorded))}
			}
			if err != nil {
				return fmt.Errorf("%w%s", err, f.PortAdvice(err))
			}
			printStatus(io, st)
			return nil
		},
	}
	up.Flags().BoolVar(&f.Replace, "replace", f.Replace, "replace a recorded cluster of another shape, running or stopped, deleting its data")
	up.Flags().StringVar(&f.Version, "version", f.Version, "the broker release to install and run, each beside the others in the cache (Kafka 3.7.0 or newer, from Maven Central; nats-server 2.10.0 or newer, built from the Go module proxy; default: the release brokerbench pins)")
	return up
}

func newLocalDownCmd(cluster clusterOf) *cobra.Command {
	return &cobra.Command{
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
}

func newLocalStatusCmd(io IO, cluster clusterOf) *cobra.Command {
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
	return status
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
