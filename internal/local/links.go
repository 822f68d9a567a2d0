package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// ClientPeer names the load generator's end of a link: the clients.
const ClientPeer = "client"

// Link is one directed network path of a cluster with links: from a node
// (or the clients) to one listener of another node. Its traffic goes
// through a proxy listening on its own loopback address, where faults and
// delays are applied to it alone.
type Link struct {
	// Name is "FROM>TO:LISTENER", FROM a node id or "client".
	Name string `json:"name"`
	// From is the connecting node's id, or 0 for the clients; To the
	// node connected to.
	From int `json:"from"`
	To   int `json:"to"`
	// Listen is the proxy's address, Upstream the listener's own.
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
}

// hostName is the name node n is known by in a cluster with links. Each
// process resolves it to the address of its own link to n (see hostsFor),
// so the same advertised name leads every peer through its own proxy. The
// .invalid top-level domain never resolves anywhere else.
func (c *Cluster) hostName(n *Node) string {
	return fmt.Sprintf("n%d.%s.brokerbench.invalid", n.ID, filepath.Base(c.StateDir))
}

// AdvertisedHost is the host a node tells its peers and clients to
// connect to: its own address, or with links its name.
func (c *Cluster) AdvertisedHost(n *Node) string {
	if c.Linked() {
		return c.hostName(n)
	}
	return n.Host
}

// linkHost is the loopback address of the link from the node at position
// from (0: the clients; k+1: c.nodes[k]) to the node at position to:
// 127.3.FROM.TO.
func linkHost(from, to int) string {
	return net.IPv4(127, 3, byte(from), byte(to)).String()
}

// planLinks lists every link of the cluster: from each node and from the
// clients to every listener of every other node, but for the metrics
// endpoints, which brokerbench reads straight from the nodes. A node
// reaches itself directly.
func (c *Cluster) planLinks() []Link {
	var links []Link
	for to, dst := range c.nodes {
		for from := 0; from <= len(c.nodes); from++ {
			fromID := 0
			if from > 0 {
				if from-1 == to {
					continue
				}
				fromID = c.nodes[from-1].ID
			}
			for _, listener := range slices.Sorted(maps.Keys(dst.Ports)) {
				if listener == "metrics" {
					continue // read by brokerbench straight from the node
				}
				if fromID == 0 && listener != "client" && !slices.Contains(c.ServedListeners(), listener) {
					continue // a listener between nodes alone
				}
				links = append(links, Link{
					Name: linkName(fromID, dst.ID, listener), From: fromID, To: dst.ID,
					Listen:   net.JoinHostPort(linkHost(from, to+1), strconv.Itoa(dst.Ports[listener])),
					Upstream: dst.Addr(listener),
				})
			}
		}
	}
	return links
}

func linkName(from, to int, listener string) string {
	f := ClientPeer
	if from != 0 {
		f = strconv.Itoa(from)
	}
	return fmt.Sprintf("%s>%d:%s", f, to, listener)
}

// hostsFor maps every node's name to the address through which the node
// at position from (0: the clients) reaches it: its own address for
// itself, its link's for the others.
func (c *Cluster) hostsFor(from int) map[string]string {
	hosts := map[string]string{}
	for to, n := range c.nodes {
		if from == to+1 {
			hosts[c.hostName(n)] = n.Host
		} else {
			hosts[c.hostName(n)] = linkHost(from, to+1)
		}
	}
	return hosts
}

// ClientHosts maps the names the nodes advertise to the addresses the
// clients reach them at: nil without links.
func (c *Cluster) ClientHosts() map[string]string {
	if !c.Linked() {
		return nil
	}
	return c.hostsFor(0)
}

// writeHostsFile writes node n's view of the names in /etc/hosts form, to
// the file a kind's process reads them from (for Java:
// -Djdk.net.hosts.file). The machine's own name resolves to 127.0.0.1, as
// software that looks itself up expects.
func (c *Cluster) writeHostsFile(n *Node) error {
	pos := slices.Index(c.nodes, n) + 1
	var b strings.Builder
	b.WriteString("# Written by brokerbench: how this node reaches its peers (each through its own link proxy).\n127.0.0.1 localhost\n")
	if h, err := os.Hostname(); err == nil && h != "" {
		fmt.Fprintf(&b, "127.0.0.1 %s\n", h)
	}
	hosts := c.hostsFor(pos)
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		fmt.Fprintf(&b, "%s %s\n", hosts[name], name)
	}
	return os.WriteFile(c.HostsFile(n), []byte(b.String()), 0o644)
}

// HostsFile is node n's hosts file, written when the cluster has links.
func (c *Cluster) HostsFile(n *Node) string { return n.ConfigFile("hosts") }

// linkProxyNode is the process that carries every link: brokerbench's
// own link proxy, with its control API on 127.0.0.1.
func (c *Cluster) linkProxyNode() *Node {
	return &Node{ID: 0, Roles: []string{"links"}, Host: "127.0.0.1",
		Ports: map[string]int{"api": 0}, Dir: filepath.Join(c.StateDir, "links")}
}

func (c *Cluster) linksFile() string { return c.proxy.ConfigFile("links.json") }

// startLinkProxy writes the links and starts the proxy that carries them.
func (c *Cluster) startLinkProxy(ctx context.Context) error {
	data, err := json.MarshalIndent(c.planLinks(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.linksFile(), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the links: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find brokerbench's executable for the link proxy: %w", err)
	}
	pid, err := c.proxy.start([]string{exe, "local", "link-proxy", "--links", c.linksFile(), "--api", c.proxy.Addr("api")}, nil)
	if err != nil {
		return err
	}
	c.logf("started the link proxy on %s (pid %d, log %s)", c.proxy.Addr("api"), pid, c.proxy.LogFile())
	deadline := time.Now().Add(10 * time.Second)
	for {
		proxies, err := c.linkAPI().Proxies()
		if err == nil && len(proxies) == len(c.planLinks()) {
			return nil
		}
		if _, ok := c.proxy.PID(); !ok || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the link proxy did not start (%v); last lines of %s:\n%s", err, c.proxy.LogFile(), tail(c.proxy.LogFile(), 15))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) linkAPI() *toxiclient.Client {
	return toxiclient.NewClient(c.proxy.Addr("api"))
}

// LinkShape is what a link does to its traffic, in each direction.
type LinkShape struct {
	// Delay is added to every byte, one way; Jitter varies it by up to
	// that much either side.
	Delay, Jitter time.Duration
	// BytesPerSecond limits the link's throughput (0: no limit).
	BytesPerSecond int64
	// Cut drops everything sent over the link, as a network partition
	// does; when the cut heals, the connections that crossed it are
	// closed and the peers reconnect.
	Cut bool
	// Reset closes the link's connections at once (TCP RST), and every
	// new one while the shape holds.
	Reset bool
}

func (s LinkShape) String() string {
	var parts []string
	if s.Delay > 0 || s.Jitter > 0 {
		p := "delay " + s.Delay.String()
		if s.Jitter > 0 {
			p += " ± " + s.Jitter.String()
		}
		parts = append(parts, p)
	}
	if s.BytesPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("bandwidth %d KB/s", s.BytesPerSecond/1000))
	}
	if s.Cut {
		parts = append(parts, "cut")
	}
	if s.Reset {
		parts = append(parts, "reset")
	}
	if len(parts) == 0 {
		return "clear"
	}
	return strings.Join(parts, ", ")
}

// LinkSelector chooses links: those between node (a node id, or 0 for
// the clients) and any of peers (node ids, 0 for the clients; none: every
// peer), in both directions.
type LinkSelector struct {
	Node  int
	Peers []int
}

func (s LinkSelector) Matches(l Link) bool {
	other := -1
	switch s.Node {
	case l.From:
		other = l.To
	case l.To:
		other = l.From
	default:
		return false
	}
	return len(s.Peers) == 0 || slices.Contains(s.Peers, other)
}

// ShapeLinks gives the links chosen by sel the shape (under the toxic name
// group, replacing that group's earlier shape on them) and returns how
// many links it shaped. Shapes of other groups stay.
func (c *Cluster) ShapeLinks(group string, sel func(Link) bool, shape LinkShape) (int, error) {
	if !c.Linked() {
		return 0, errors.New("the local cluster has no links: start it with links (local up --links, or a study setup's network:) to shape them")
	}
	api := c.linkAPI()
	proxies, err := api.Proxies()
	if err != nil {
		return 0, fmt.Errorf("reach the link proxy: %w", err)
	}
	shaped := 0
	for _, l := range c.planLinks() {
		if !sel(l) {
			continue
		}
		p, ok := proxies[l.Name]
		if !ok {
			return shaped, fmt.Errorf("the link proxy has no link %s", l.Name)
		}
		if err := applyShape(p, group, shape); err != nil {
			return shaped, fmt.Errorf("link %s: %w", l.Name, err)
		}
		shaped++
	}
	return shaped, nil
}

// applyShape replaces group's toxics on proxy p with those of shape.
func applyShape(p *toxiclient.Proxy, group string, shape LinkShape) error {
	existing, err := p.Toxics()
	if err != nil {
		return err
	}
	for _, t := range existing {
		if strings.HasPrefix(t.Name, group+".") {
			if err := p.RemoveToxic(t.Name); err != nil {
				return err
			}
		}
	}
	for _, stream := range []string{"upstream", "downstream"} {
		add := func(kind string, attrs toxiclient.Attributes) error {
			_, err := p.AddToxic(group+"."+kind+"."+stream, kind, stream, 1, attrs)
			return err
		}
		if shape.Delay > 0 || shape.Jitter > 0 {
			if err := add("latency", toxiclient.Attributes{"latency": shape.Delay.Milliseconds(), "jitter": shape.Jitter.Milliseconds()}); err != nil {
				return err
			}
		}
		if shape.BytesPerSecond > 0 {
			if err := add("bandwidth", toxiclient.Attributes{"rate": max(1, shape.BytesPerSecond/1000)}); err != nil {
				return err
			}
		}
		if shape.Cut {
			if err := add("timeout", toxiclient.Attributes{"timeout": 0}); err != nil {
				return err
			}
		}
		if shape.Reset {
			if err := add("reset_peer", toxiclient.Attributes{"timeout": 0}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Zones places the cluster's nodes in zones sites: broker i and dedicated
// controller j in zone ((i-1) mod zones)+1, and the clients (id 0) in
// zone 1. It maps node ids to zones.
func (c *Cluster) Zones(zones int) map[int]int {
	zone := map[int]int{0: 1}
	brokers, controllers := 0, 0
	for _, n := range c.Nodes() {
		i := 0
		if n.HasRole("broker") {
			brokers++
			i = brokers
		} else {
			controllers++
			i = controllers
		}
		zone[n.ID] = (i-1)%max(1, zones) + 1
	}
	return zone
}

// clearFaultLinks removes the shapes that faults gave links (toxic groups
// "fault-N"), keeping the others.
func (c *Cluster) clearFaultLinks() error {
	if !c.Linked() {
		return nil
	}
	proxies, err := c.linkAPI().Proxies()
	if err != nil {
		return fmt.Errorf("reach the link proxy: %w", err)
	}
	var errs []error
	for _, p := range proxies {
		toxics, err := p.Toxics()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range toxics {
			if strings.HasPrefix(t.Name, "fault-") {
				errs = append(errs, p.RemoveToxic(t.Name))
			}
		}
	}
	return errors.Join(errs...)
}
