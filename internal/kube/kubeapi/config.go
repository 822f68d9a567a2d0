// Package kubeapi talks to a Kubernetes API server over HTTPS with JSON:
// who to be and where, read from a kubeconfig file or a pod's service
// account (Load), and the few calls brokerbench makes on a run's objects
// (Client). It implements only what brokerbench uses, against the
// API's documented wire format, so that the core binary does not carry
// a general-purpose client.
package kubeapi

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Config is how to reach an API server and who to be there.
type Config struct {
	// Host is the API server's URL: https://host:port, maybe with a path
	// prefix (a proxy's).
	Host string
	// CAData are the PEM certificates the server's certificate is checked
	// against (none: the system's).
	CAData []byte
	// Insecure skips checking the server's certificate.
	Insecure bool
	// ServerName is the name the server's certificate must carry
	// (default: Host's).
	ServerName string
	// CertData and KeyData are a client certificate and its key, PEM.
	CertData, KeyData []byte
	// BearerToken is sent with every request.
	BearerToken string
	// TokenFile holds a bearer token, read again for every request (a
	// service account's token is rotated while a run goes on).
	TokenFile string
	// Username and Password are sent with basic authentication.
	Username, Password string
	// Exec runs a credential plugin for a token or client certificate.
	Exec *ExecConfig
	// Impersonate acts as another user.
	Impersonate Impersonation
	// ProxyURL is the HTTP(S) proxy to use (default: HTTPS_PROXY and
	// NO_PROXY from the environment).
	ProxyURL string
	// Source says where this configuration was read, for errors.
	Source string
}

// Impersonation is who to act as, with the Impersonate-* headers.
type Impersonation struct {
	User   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// ExecConfig runs a credential plugin, as kubectl does: the command
// prints an ExecCredential with a token or a client certificate
// (client.authentication.k8s.io/v1 or v1beta1).
type ExecConfig struct {
	Command    string   `json:"command"`
	Args       []string `json:"args,omitempty"`
	Env        []EnvVar `json:"env,omitempty"`
	APIVersion string   `json:"apiVersion"`
	// InstallHint is shown when the command is not found.
	InstallHint string `json:"installHint,omitempty"`
	// ProvideClusterInfo hands the plugin the cluster's address and CA.
	ProvideClusterInfo bool `json:"provideClusterInfo,omitempty"`
	// InteractiveMode is Never, IfAvailable (the default) or Always:
	// whether the plugin may read the terminal.
	InteractiveMode string `json:"interactiveMode,omitempty"`
}

// kubeconfig is the part of a kubeconfig file that Load reads.
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string  `json:"name"`
		Cluster cluster `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User user   `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string       `json:"name"`
		Context contextEntry `json:"context"`
	} `json:"contexts"`
}

type cluster struct {
	Server                   string `json:"server"`
	TLSServerName            string `json:"tls-server-name"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
	CertificateAuthority     string `json:"certificate-authority"`
	CertificateAuthorityData []byte `json:"certificate-authority-data"`
	ProxyURL                 string `json:"proxy-url"`
	dir                      string
}

type user struct {
	ClientCertificate     string              `json:"client-certificate"`
	ClientCertificateData []byte              `json:"client-certificate-data"`
	ClientKey             string              `json:"client-key"`
	ClientKeyData         []byte              `json:"client-key-data"`
	Token                 string              `json:"token"`
	TokenFile             string              `json:"tokenFile"`
	As                    string              `json:"as"`
	AsUID                 string              `json:"as-uid"`
	AsGroups              []string            `json:"as-groups"`
	AsUserExtra           map[string][]string `json:"as-user-extra"`
	Username              string              `json:"username"`
	Password              string              `json:"password"`
	AuthProvider          *struct {
		Name string `json:"name"`
	} `json:"auth-provider"`
	Exec *ExecConfig `json:"exec"`
	dir  string
}

type contextEntry struct {
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace"`
}

// merged is kubeconfig files read together: for each name the first
// file's entry, and the first current context set.
type merged struct {
	current  string
	clusters map[string]cluster
	users    map[string]user
	contexts map[string]contextEntry
	files    []string
}

// ErrNoConfig is returned by Load when no kubeconfig file names a cluster
// and this is not a pod.
var ErrNoConfig = errors.New("no kubeconfig found ($KUBECONFIG, ~/.kube/config) and not in a pod")

// Load reads the configuration of context (default: the current one)
// from the kubeconfig file at path, else from $KUBECONFIG's files, else
// from ~/.kube/config; with no path given, a pod that finds none of these
// (or none that works) uses its service account.
func Load(path, context string) (*Config, error) {
	files, explicit := []string{path}, path != ""
	if !explicit {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			files = filepath.SplitList(env)
		} else if home, err := os.UserHomeDir(); err == nil {
			files = []string{filepath.Join(home, ".kube", "config")}
		}
	}
	m, err := readFiles(files, explicit)
	if err == nil && len(m.files) == 0 {
		err = ErrNoConfig
	}
	if err == nil {
		var cfg *Config
		if cfg, err = m.config(context); err == nil {
			return cfg, nil
		}
	}
	if !explicit {
		if in, inErr := InCluster(); inErr == nil {
			return in, nil
		}
	}
	return nil, err
}

// readFiles reads and merges kubeconfig files; a missing one is skipped
// unless must.
func readFiles(files []string, must bool) (*merged, error) {
	m := &merged{clusters: map[string]cluster{}, users: map[string]user{}, contexts: map[string]contextEntry{}}
	for _, f := range files {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) && !must {
			continue
		}
		if err != nil {
			return nil, err
		}
		kc, err := parse(data)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", f, err)
		}
		dir := filepath.Dir(f)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		m.files = append(m.files, f)
		if m.current == "" {
			m.current = kc.CurrentContext
		}
		for _, c := range kc.Clusters {
			if _, ok := m.clusters[c.Name]; !ok {
				c.Cluster.dir = dir
				m.clusters[c.Name] = c.Cluster
			}
		}
		for _, u := range kc.Users {
			if _, ok := m.users[u.Name]; !ok {
				u.User.dir = dir
				m.users[u.Name] = u.User
			}
		}
		for _, c := range kc.Contexts {
			if _, ok := m.contexts[c.Name]; !ok {
				m.contexts[c.Name] = c.Context
			}
		}
	}
	return m, nil
}

// parse reads a kubeconfig file's content (YAML or JSON).
func parse(data []byte) (*kubeconfig, error) {
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, err
	}
	return &kc, nil
}

// config resolves context (default: the current one) to a Config.
func (m *merged) config(context string) (*Config, error) {
	where := "kubeconfig " + strings.Join(m.files, string(filepath.ListSeparator))
	if context == "" {
		context = m.current
	}
	if context == "" {
		return nil, fmt.Errorf("%s: no current context: give --context", where)
	}
	ctx, ok := m.contexts[context]
	if !ok {
		return nil, fmt.Errorf("%s: no context %q", where, context)
	}
	where += ", context " + context
	cl, ok := m.clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("%s: no cluster %q", where, ctx.Cluster)
	}
	if cl.Server == "" {
		return nil, fmt.Errorf("%s: cluster %q has no server", where, ctx.Cluster)
	}
	cfg := &Config{Host: cl.Server, Insecure: cl.InsecureSkipTLSVerify, ServerName: cl.TLSServerName, ProxyURL: cl.ProxyURL, Source: where}
	var err error
	if cfg.CAData, err = dataOrFile(cl.CertificateAuthorityData, cl.CertificateAuthority, cl.dir); err != nil {
		return nil, fmt.Errorf("%s: certificate-authority: %w", where, err)
	}
	if ctx.User == "" {
		return cfg, nil
	}
	u, ok := m.users[ctx.User]
	if !ok {
		return nil, fmt.Errorf("%s: no user %q", where, ctx.User)
	}
	if u.AuthProvider != nil {
		return nil, fmt.Errorf("%s: user %q: the auth-provider %q is not supported: use a credential plugin (exec) instead, as kubectl does since 1.26", where, ctx.User, u.AuthProvider.Name)
	}
	if cfg.CertData, err = dataOrFile(u.ClientCertificateData, u.ClientCertificate, u.dir); err != nil {
		return nil, fmt.Errorf("%s: client-certificate: %w", where, err)
	}
	if cfg.KeyData, err = dataOrFile(u.ClientKeyData, u.ClientKey, u.dir); err != nil {
		return nil, fmt.Errorf("%s: client-key: %w", where, err)
	}
	cfg.BearerToken, cfg.Username, cfg.Password = u.Token, u.Username, u.Password
	if u.TokenFile != "" {
		cfg.TokenFile = resolve(u.TokenFile, u.dir)
	}
	cfg.Impersonate = Impersonation{User: u.As, UID: u.AsUID, Groups: u.AsGroups, Extra: u.AsUserExtra}
	if u.Exec != nil {
		e := *u.Exec
		// A command given as a relative path with a directory is
		// relative to the kubeconfig; a bare name is looked up in PATH.
		if strings.ContainsRune(e.Command, filepath.Separator) {
			e.Command = resolve(e.Command, u.dir)
		}
		cfg.Exec = &e
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("%s: user %q: %w", where, ctx.User, err)
	}
	return cfg, nil
}

// check refuses contradictory settings.
func (c *Config) check() error {
	if (c.BearerToken != "" || c.TokenFile != "") && c.Username != "" {
		return errors.New("give a token or a username and password, not both")
	}
	if (len(c.CertData) > 0) != (len(c.KeyData) > 0) {
		return errors.New("a client certificate needs its key, and a key its certificate")
	}
	if c.Insecure && len(c.CAData) > 0 {
		return errors.New("give a certificate authority or insecure-skip-tls-verify, not both")
	}
	return nil
}

func resolve(p, dir string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// dataOrFile is data, else the content of the file (relative to dir).
func dataOrFile(data []byte, file, dir string) ([]byte, error) {
	if len(data) > 0 || file == "" {
		return data, nil
	}
	return os.ReadFile(resolve(file, dir))
}

// The service account's files in a pod.
const (
	serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	serviceAccountCA    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// InCluster is the configuration of a pod: its service account, and the
// API server's address from the environment Kubernetes sets.
func InCluster() (*Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	if _, err := os.Stat(serviceAccountToken); err != nil {
		return nil, fmt.Errorf("in a pod without a service account token: %w", err)
	}
	ca, err := os.ReadFile(serviceAccountCA)
	if err != nil {
		return nil, fmt.Errorf("in a pod without the cluster's CA: %w", err)
	}
	return &Config{Host: "https://" + net.JoinHostPort(host, port), CAData: ca, TokenFile: serviceAccountToken, Source: "the pod's service account"}, nil
}
