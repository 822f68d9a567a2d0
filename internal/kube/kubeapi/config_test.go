package kubeapi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes data to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noCluster empties the environment Load reads, so that the machine's own
// kubeconfig or service account plays no part.
func noCluster(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

const twoContexts = `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: certs/ca.pem, tls-server-name: kubernetes}
- name: prod
  cluster: {server: "https://127.0.0.2:6443", certificate-authority-data: Q0EtREFUQQ==, proxy-url: "http://127.0.0.1:3128"}
users:
- name: dev
  user: {token: dev-token, as: alice, as-groups: [team], as-user-extra: {scopes: [view]}}
- name: prod
  user: {client-certificate-data: Q0VSVA==, client-key: keys/prod.key}
- name: plugin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: bin/get-token, args: [--cluster, dev], env: [{name: X, value: "1"}], interactiveMode: Never}
- name: path-plugin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: get-token}
- name: both
  user: {token: t, username: u, password: p}
- name: gcp
  user:
    auth-provider: {name: gcp}
contexts:
- {name: dev, context: {cluster: dev, user: dev, namespace: team}}
- {name: prod, context: {cluster: prod, user: prod}}
- {name: plugin, context: {cluster: dev, user: plugin}}
- {name: path-plugin, context: {cluster: dev, user: path-plugin}}
- {name: both, context: {cluster: dev, user: both}}
- {name: gcp, context: {cluster: dev, user: gcp}}
- {name: no-user, context: {cluster: dev, user: nobody}}
`

// TestLoad: a kubeconfig's context becomes the API server's address and
// credentials, files relative to the kubeconfig's directory; what cannot
// be used is refused, naming the file and context.
func TestLoad(t *testing.T) {
	noCluster(t)
	dir := t.TempDir()
	path := writeFile(t, dir, "kubeconfig", twoContexts)
	writeFile(t, dir, "certs/ca.pem", "CA-FILE")
	writeFile(t, dir, "keys/prod.key", "KEY-FILE")
	for _, tc := range []struct {
		context string
		check   func(*Config) bool
		err     string
	}{
		// The current context: a token, a CA file, impersonation.
		{"", func(c *Config) bool {
			return c.Host == "https://127.0.0.1:6443" && string(c.CAData) == "CA-FILE" && c.ServerName == "kubernetes" && c.BearerToken == "dev-token" &&
				c.Impersonate.User == "alice" && strings.Join(c.Impersonate.Groups, ",") == "team" && c.Impersonate.Extra["scopes"][0] == "view" &&
				strings.Contains(c.Source, "context dev")
		}, ""},
		// Inline data (base64 in the file) and a key file.
		{"prod", func(c *Config) bool {
			return string(c.CAData) == "CA-DATA" && string(c.CertData) == "CERT" && string(c.KeyData) == "KEY-FILE" && c.ProxyURL == "http://127.0.0.1:3128"
		}, ""},
		// A plugin given with a directory is relative to the kubeconfig.
		{"plugin", func(c *Config) bool {
			return c.Exec != nil && c.Exec.Command == filepath.Join(dir, "bin/get-token") && c.Exec.Env[0].Value == "1" && c.Exec.InteractiveMode == "Never"
		}, ""},
		// A bare command name is looked up in PATH when run.
		{"path-plugin", func(c *Config) bool { return c.Exec.Command == "get-token" }, ""},
		// Sad paths.
		{"both", nil, "not both"},
		{"gcp", nil, `auth-provider "gcp" is not supported`},
		{"no-user", nil, `no user "nobody"`},
		{"staging", nil, `no context "staging"`},
	} {
		cfg, err := Load(path, tc.context)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
				t.Errorf("context %q: %v, want an error naming %s with %q", tc.context, err, path, tc.err)
			}
		case err != nil:
			t.Errorf("context %q: %v", tc.context, err)
		case !tc.check(cfg):
			t.Errorf("context %q: %+v", tc.context, cfg)
		}
	}
}

// TestLoadMerges: $KUBECONFIG's files are read together as kubectl reads
// them: for each name the first file's entry, the first current context
// set; files that do not exist are skipped.
func TestLoadMerges(t *testing.T) {
	noCluster(t)
	a, b := t.TempDir(), t.TempDir()
	first := writeFile(t, a, "config", `
clusters: [{name: c, cluster: {server: "https://first:6443"}}]
users: [{name: u, user: {tokenFile: token}}]
`)
	second := writeFile(t, b, "config", `
current-context: x
clusters: [{name: c, cluster: {server: "https://second:6443"}}, {name: d, cluster: {server: "https://d:6443"}}]
users: [{name: u, user: {token: second}}]
contexts: [{name: x, context: {cluster: c, user: u}}, {name: other, context: {cluster: d}}]
`)
	t.Setenv("KUBECONFIG", strings.Join([]string{filepath.Join(a, "missing"), first, second}, string(filepath.ListSeparator)))
	cfg, err := Load("", "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://first:6443" || cfg.TokenFile != filepath.Join(a, "token") || cfg.BearerToken != "" {
		t.Errorf("merged: %+v", cfg)
	}
	if cfg, err = Load("", "other"); err != nil || cfg.Host != "https://d:6443" {
		t.Errorf("context other: %+v, %v", cfg, err)
	}
}

// TestLoadNothing: no kubeconfig and not in a pod says so; a kubeconfig
// given that does not exist is an error, never a fallback.
func TestLoadNothing(t *testing.T) {
	noCluster(t)
	if _, err := Load("", ""); !errors.Is(err, ErrNoConfig) {
		t.Errorf("nothing: %v", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
	if _, err := Load("/nonexistent/kubeconfig", ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing kubeconfig: %v", err)
	}
	dir := t.TempDir()
	bad := writeFile(t, dir, "config", "clusters: {not: a list}\n")
	if _, err := Load(bad, ""); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a broken kubeconfig: %v", err)
	}
}

// FuzzParse: any kubeconfig content is read or refused, and any context of
// it resolved or refused, without a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(twoContexts), "prod")
	f.Add([]byte(`{"current-context":"a","contexts":[{"name":"a","context":{"cluster":"a","user":"a"}}],"clusters":[{"name":"a","cluster":{"server":"https://x"}}],"users":[{"name":"a","user":{"exec":{"command":"./x"}}}]}`), "")
	f.Add([]byte("clusters: [{name: a, cluster: {certificate-authority-data: '!!'}}]"), "a")
	f.Fuzz(func(t *testing.T, data []byte, context string) {
		kc, err := parse(data)
		if err != nil {
			return
		}
		m := &merged{clusters: map[string]cluster{}, users: map[string]user{}, contexts: map[string]contextEntry{}, files: []string{"fuzz"}, current: kc.CurrentContext}
		for _, c := range kc.Clusters {
			// No file is read: only inline data.
			c.Cluster.CertificateAuthority = ""
			m.clusters[c.Name] = c.Cluster
		}
		for _, u := range kc.Users {
			u.User.ClientCertificate, u.User.ClientKey = "", ""
			m.users[u.Name] = u.User
		}
		for _, c := range kc.Contexts {
			m.contexts[c.Name] = c.Context
		}
		cfg, err := m.config(context)
		if err == nil && cfg.Host == "" {
			t.Errorf("a config with no host: %+v", cfg)
		}
	})
}
