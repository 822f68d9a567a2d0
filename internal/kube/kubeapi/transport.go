package kubeapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Transport returns an HTTP transport to the API server that
// authenticates every request as c says. It is safe for concurrent use.
func (c *Config) Transport() (http.RoundTripper, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.Insecure, ServerName: c.ServerName}
	if len(c.CAData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CAData) {
			return nil, errors.New("the certificate authority holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if len(c.CertData) > 0 {
		cert, err := tls.X509KeyPair(c.CertData, c.KeyData)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	t := &authTransport{cfg: c}
	if c.Exec != nil {
		t.exec = &execCredentials{cfg: c.Exec, cluster: c}
		if len(tc.Certificates) == 0 {
			tc.GetClientCertificate = t.exec.clientCertificate
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tc
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("proxy-url %q: give an http:// or https:// proxy", c.ProxyURL)
		}
		base.Proxy = http.ProxyURL(u)
	}
	t.base = base
	return t, nil
}

// authTransport adds the credentials and impersonation headers to every
// request; a request an exec plugin's token was refused for is sent once
// more with a new token.
type authTransport struct {
	base http.RoundTripper
	cfg  *Config
	exec *execCredentials
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r, token, err := t.authorize(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || t.exec == nil || token == "" || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	// The plugin's token may have expired early: ask for a new one.
	t.exec.forget(token)
	resp.Body.Close()
	if r, _, err = t.authorize(req); err != nil {
		return nil, err
	}
	if req.GetBody != nil {
		if r.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(r)
}

// authorize returns a copy of req with the credentials, and the bearer
// token used ("" for none).
func (t *authTransport) authorize(req *http.Request) (*http.Request, string, error) {
	r := req.Clone(req.Context())
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", "brokerbench")
	}
	c := t.cfg
	token := c.BearerToken
	switch {
	case token != "":
	case c.TokenFile != "":
		data, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, "", fmt.Errorf("read the token: %w", err)
		}
		token = strings.TrimSpace(string(data))
	case c.Username != "":
		r.SetBasicAuth(c.Username, c.Password)
	case t.exec != nil:
		cred, err := t.exec.get(req.Context())
		if err != nil {
			return nil, "", err
		}
		token = cred.token
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if im := c.Impersonate; im.User != "" {
		r.Header.Set("Impersonate-User", im.User)
		if im.UID != "" {
			r.Header.Set("Impersonate-Uid", im.UID)
		}
		for _, g := range im.Groups {
			r.Header.Add("Impersonate-Group", g)
		}
		for k, vs := range im.Extra {
			for _, v := range vs {
				r.Header.Add("Impersonate-Extra-"+url.PathEscape(k), v)
			}
		}
	}
	return r, token, nil
}

// execCredentials runs a credential plugin and keeps what it printed
// until it expires. Safe for concurrent use.
type execCredentials struct {
	cfg     *ExecConfig
	cluster *Config
	mu      sync.Mutex
	cred    *execCredential
}

type execCredential struct {
	token  string
	cert   *tls.Certificate
	expiry time.Time
}

// execOutput is the ExecCredential a plugin prints.
type execOutput struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     *struct {
		Token                 string     `json:"token"`
		ClientCertificateData string     `json:"clientCertificateData"`
		ClientKeyData         string     `json:"clientKeyData"`
		ExpirationTimestamp   *time.Time `json:"expirationTimestamp"`
	} `json:"status"`
}

// get returns the plugin's credential, running it when there is none or
// it has expired.
func (e *execCredentials) get(ctx context.Context) (*execCredential, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.cred; c != nil && (c.expiry.IsZero() || time.Until(c.expiry) > 10*time.Second) {
		return c, nil
	}
	c, err := e.run(ctx)
	if err != nil {
		return nil, err
	}
	e.cred = c
	return c, nil
}

// forget drops the credential holding token, which was refused.
func (e *execCredentials) forget(token string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cred != nil && e.cred.token == token {
		e.cred = nil
	}
}

// clientCertificate is tls.Config.GetClientCertificate: the plugin's
// certificate, or none when it gives a token.
func (e *execCredentials) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := e.get(ctx)
	if err != nil {
		return nil, err
	}
	if c.cert == nil {
		return &tls.Certificate{}, nil
	}
	return c.cert, nil
}

// run runs the plugin as kubectl does: KUBERNETES_EXEC_INFO describes
// the request, the terminal is handed over only if the plugin may use it,
// and its messages go to standard error.
func (e *execCredentials) run(ctx context.Context) (*execCredential, error) {
	cfg := e.cfg
	what := fmt.Sprintf("credential plugin %s", cfg.Command)
	if cfg.APIVersion != "client.authentication.k8s.io/v1" && cfg.APIVersion != "client.authentication.k8s.io/v1beta1" {
		return nil, fmt.Errorf("%s: apiVersion %q: client.authentication.k8s.io/v1 or v1beta1 are supported", what, cfg.APIVersion)
	}
	terminal := term.IsTerminal(int(os.Stdin.Fd()))
	interactive := false
	switch cfg.InteractiveMode {
	case "Never":
	case "", "IfAvailable":
		interactive = terminal
	case "Always":
		if !terminal {
			return nil, fmt.Errorf("%s needs a terminal (interactiveMode Always), and standard input is not one", what)
		}
		interactive = true
	default:
		return nil, fmt.Errorf("%s: interactiveMode %q: give Never, IfAvailable or Always", what, cfg.InteractiveMode)
	}
	spec := map[string]any{"interactive": interactive}
	if cfg.ProvideClusterInfo {
		cl := map[string]any{"server": e.cluster.Host, "tls-server-name": e.cluster.ServerName, "insecure-skip-tls-verify": e.cluster.Insecure}
		if len(e.cluster.CAData) > 0 {
			cl["certificate-authority-data"] = e.cluster.CAData
		}
		spec["cluster"] = cl
	}
	info, err := json.Marshal(map[string]any{"apiVersion": cfg.APIVersion, "kind": "ExecCredential", "spec": spec})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.Command, cfg.Args...)
	cmd.Env = os.Environ()
	for _, v := range cfg.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.Env = append(cmd.Env, "KUBERNETES_EXEC_INFO="+string(info))
	cmd.Stderr = os.Stderr
	if interactive {
		cmd.Stdin = os.Stdin
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if (errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)) && cfg.InstallHint != "" {
			return nil, fmt.Errorf("%s: %w\n%s", what, err, cfg.InstallHint)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var got execOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		return nil, fmt.Errorf("%s printed no ExecCredential: %w", what, err)
	}
	if got.APIVersion != cfg.APIVersion || got.Kind != "ExecCredential" || got.Status == nil {
		return nil, fmt.Errorf("%s printed %s %s with no status; want an ExecCredential of %s", what, got.APIVersion, got.Kind, cfg.APIVersion)
	}
	c := &execCredential{token: got.Status.Token}
	if got.Status.ExpirationTimestamp != nil {
		c.expiry = *got.Status.ExpirationTimestamp
	}
	if got.Status.ClientCertificateData != "" || got.Status.ClientKeyData != "" {
		cert, err := tls.X509KeyPair([]byte(got.Status.ClientCertificateData), []byte(got.Status.ClientKeyData))
		if err != nil {
			return nil, fmt.Errorf("%s: its client certificate: %w", what, err)
		}
		c.cert = &cert
	}
	if c.token == "" && c.cert == nil {
		return nil, fmt.Errorf("%s gave neither a token nor a client certificate", what)
	}
	return c, nil
}
