package local

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/brokerbench/brokerbench/internal/pki"
	"github.com/brokerbench/brokerbench/internal/secret"
)

// Securer is implemented by kinds whose nodes can serve clients over TLS
// and with authentication, each way on its own listener.
type Securer interface {
	// Listeners are the client listeners the kind can serve, named for
	// what they offer ("sasl_ssl"); the first is plain, the default.
	Listeners() []string
	// OpenListeners are the client listeners on which a node of a
	// secured cluster lets in a client that brings nothing of the
	// cluster's Security: neither trust in its authority, nor its client
	// certificate, nor its user's password or anything made from it (a
	// token). They are named as drivers name the listener they connect
	// to: among Listeners, or a port of the kind's own that every node
	// has (RabbitMQ's "stream"). Every other listener of a secured node
	// asks a client for some of it; none: every listener does, the
	// plain one included.
	OpenListeners() []string
}

// ClientAuther is implemented by secured kinds whose clients do not log
// in with the cluster's user and password: ClientAuth says, in a phrase
// for the cluster's status, what they present instead, naming the files
// of sec it comes from.
type ClientAuther interface {
	ClientAuth(sec *Security) string
}

// Username is the user every secured local cluster knows.
const Username = "brokerbench"

// Security is where a secured cluster's credentials are: its certificate
// authority, a client certificate and key, its user and the file holding
// the user's password. It holds no secret itself.
type Security struct {
	Dir string `json:"dir"`
	// CAFile holds the authority's certificate (PEM): the clients' trust
	// store.
	CAFile string `json:"caFile"`
	// ClientKeyStore holds a client's key and certificate chain (PEM), for
	// brokers that authenticate clients by certificate.
	ClientKeyStore string `json:"clientKeyStore"`
	Username       string `json:"username"`
	PasswordFile   string `json:"passwordFile"`
}

// Password reads the user's password and has it kept out of brokerbench's
// outputs.
func (s *Security) Password() (string, error) {
	data, err := os.ReadFile(s.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("read the local cluster's password: %w", err)
	}
	pw := string(data)
	secret.Keep(pw)
	return pw, nil
}

// NodeKeyStore is the PEM file with node's key and certificate chain.
func (s *Security) NodeKeyStore(n *Node) string {
	return filepath.Join(s.Dir, fmt.Sprintf("node-%d.pem", n.ID))
}

// ServedListeners returns the client listeners the cluster serves, the first
// on its client port: those asked for, or the kind's default; nil for
// kinds with only their one client listener.
func (c *Cluster) ServedListeners() []string {
	if c.served != nil {
		return c.served
	}
	if len(c.Listeners) > 0 {
		return c.Listeners
	}
	if s, ok := c.Kind.(Securer); ok {
		return s.Listeners()[:1]
	}
	return nil
}

// Serve has the cluster serve listener to clients when it is started:
// the recorded cluster's listeners are kept if they include it; else, if
// the kind serves it only when serving all of its listeners (Securer),
// it is asked to, its plain one on the client port. A listener every
// cluster of the kind serves changes nothing.
func (c *Cluster) Serve(listener string) {
	if st := c.Status(); len(st.Nodes) > 0 && len(st.Endpoints(listener)) > 0 {
		c.Listeners = st.Listeners
		return
	}
	s, ok := c.Kind.(Securer)
	if !ok || c.provides(nil, listener) {
		return
	}
	if c.provides(s.Listeners(), listener) {
		c.Listeners = s.Listeners()
	}
}

// provides reports whether the cluster, serving listeners (nil: the
// kind's default), would serve listener: as one of them, or on a port of
// its own.
func (c *Cluster) provides(listeners []string, listener string) bool {
	planned := *c
	planned.Listeners, planned.served = listeners, nil
	if listener == "" || listener == "client" || slices.Contains(planned.ServedListeners(), listener) {
		return true
	}
	for _, n := range c.Kind.Layout(&planned) {
		if _, ok := n.Ports[listener]; ok {
			return true
		}
	}
	return false
}

// ListenerKey is the key of listener l in the nodes' ports: "client" for
// the first listener, its own name for the others.
func (c *Cluster) ListenerKey(l string) string {
	if ls := c.ServedListeners(); len(ls) > 0 && ls[0] == l {
		return "client"
	}
	return l
}

// Serving reports whether the cluster serves listener l.
func (c *Cluster) Serving(l string) bool { return slices.Contains(c.ServedListeners(), l) }

// CheckListeners checks that the kind serves every listener asked for.
func (c *Cluster) CheckListeners() error {
	if len(c.Listeners) == 0 {
		return nil
	}
	s, ok := c.Kind.(Securer)
	if !ok {
		return fmt.Errorf("the local %s runs without TLS or authentication: it serves no listener %q", c.Kind.Name(), c.Listeners[0])
	}
	for _, l := range c.Listeners {
		if !slices.Contains(s.Listeners(), l) {
			return fmt.Errorf("the local %s serves no listener %q; it serves: %s", c.Kind.Name(), l, strings.Join(s.Listeners(), ", "))
		}
	}
	return nil
}

// Secured reports whether the cluster serves a listener other than the
// plain one: it then has certificates and a user.
func (c *Cluster) Secured() bool {
	s, ok := c.Kind.(Securer)
	if !ok {
		return false
	}
	for _, l := range c.ServedListeners() {
		if l != s.Listeners()[0] {
			return true
		}
	}
	return false
}

// AsksForCredentials reports whether a client connecting on listener
// ("" or "client": the first listener served) needs some of the
// cluster's credentials: the cluster is secured and listener is not one
// of its kind's OpenListeners.
func (c *Cluster) AsksForCredentials(listener string) bool {
	s, ok := c.Kind.(Securer)
	if !ok || !c.Secured() {
		return false
	}
	if listener == "" || listener == "client" {
		listener = c.ServedListeners()[0]
	}
	return !slices.Contains(s.OpenListeners(), listener)
}

// Security returns where the cluster's credentials are; nil if it is not
// secured.
func (c *Cluster) Security() *Security {
	if !c.Secured() {
		return nil
	}
	dir := filepath.Join(c.StateDir, "security")
	return &Security{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), ClientKeyStore: filepath.Join(dir, "client.pem"),
		Username: Username, PasswordFile: filepath.Join(dir, "password")}
}

// makeCredentials makes a secured cluster's credentials anew: an
// authority, a certificate for every node naming the addresses clients
// reach it by, a client certificate, and a random password. Keys and the
// password are readable by their owner alone.
func (c *Cluster) makeCredentials() error {
	sec := c.Security()
	if sec == nil {
		return nil
	}
	if err := os.RemoveAll(sec.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(sec.Dir, 0o700); err != nil {
		return err
	}
	ca, err := pki.NewAuthority("brokerbench local " + c.Kind.Name() + " CA " + c.ID)
	if err != nil {
		return err
	}
	if err := ca.WriteFiles(sec.CAFile, filepath.Join(sec.Dir, "ca.key")); err != nil {
		return err
	}
	issue := func(file, name string, hosts ...string) error {
		leaf, err := ca.Issue(name, hosts...)
		if err != nil {
			return err
		}
		data, err := leaf.KeyStorePEM(ca)
		if err != nil {
			return err
		}
		return os.WriteFile(file, data, 0o600)
	}
	for _, n := range c.nodes {
		hosts := []string{n.Host, "localhost"}
		if h := c.AdvertisedHost(n); h != n.Host {
			hosts = append(hosts, h)
		}
		if err := issue(sec.NodeKeyStore(n), fmt.Sprintf("%s node %d", c.Kind.Name(), n.ID), hosts...); err != nil {
			return fmt.Errorf("certificate of node %d: %w", n.ID, err)
		}
	}
	if err := issue(sec.ClientKeyStore, Username); err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	pw := make([]byte, 18)
	_, _ = rand.Read(pw)
	return os.WriteFile(sec.PasswordFile, []byte(base64.RawURLEncoding.EncodeToString(pw)), 0o600)
}
