package kubeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/pki"
)

// request is what the test server saw of one request.
type request struct {
	method, path, query, auth, contentType string
	header                                 http.Header
	body                                   map[string]any
}

// apiServer is a TLS server that records requests and answers each with
// answer; it requires a client certificate when clientCA is set.
type apiServer struct {
	*httptest.Server
	ca     *pki.Authority
	mu     sync.Mutex
	seen   []request
	answer func(w http.ResponseWriter, r *http.Request)
}

func newAPIServer(t *testing.T, clientCA *pki.Authority, answer func(w http.ResponseWriter, r *http.Request)) *apiServer {
	t.Helper()
	ca, err := pki.NewAuthority("kubeapi-test")
	if err != nil {
		t.Fatal(err)
	}
	issued, err := ca.Issue("apiserver", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	store, err := issued.KeyStorePEM(ca)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(store, store)
	if err != nil {
		t.Fatal(err)
	}
	s := &apiServer{ca: ca, answer: answer}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"), header: r.Header}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &req.body)
		s.mu.Lock()
		s.seen = append(s.seen, req)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		s.answer(w, r)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	// The untrusted client's refused handshake is expected.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA.Certificate())
		s.TLS.ClientCAs, s.TLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.seen...)
}

// config reaches s, checking its certificate.
func (s *apiServer) config() *Config {
	return &Config{Host: s.URL, CAData: pki.CertPEM(s.ca.Certificate()), Source: "the test's config"}
}

func status(w http.ResponseWriter, code int, reason, message string) {
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"message":%q,"code":%d}`, reason, message, code)
}

// TestClientCalls: each call's method, path, query and body are the
// API's, under a path prefix, with a client certificate and the
// impersonation headers; answers are decoded and a log streams.
func TestClientCalls(t *testing.T) {
	clientCA, err := pki.NewAuthority("clients")
	if err != nil {
		t.Fatal(err)
	}
	issued, err := clientCA.Issue("admin")
	if err != nil {
		t.Fatal(err)
	}
	key, err := issued.KeyStorePEM(clientCA)
	if err != nil {
		t.Fatal(err)
	}
	srv := newAPIServer(t, clientCA, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/log"):
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "line 1\nline 2\n")
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods"):
			fmt.Fprint(w, `{"kind":"PodList","items":[{"metadata":{"name":"p","labels":{"a":"b"}},"status":{"phase":"Running","containerStatuses":[{"name":"c","state":{"terminated":{"exitCode":3}}}]}}]}`)
		default:
			fmt.Fprint(w, `{}`)
		}
	})
	cfg := srv.config()
	cfg.Host += "/proxy/"
	cfg.CertData, cfg.KeyData = key, key
	cfg.Impersonate = Impersonation{User: "alice", Groups: []string{"g1", "g2"}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := &Job{TypeMeta: TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: ObjectMeta{Name: "j", Namespace: "ns"}}
	if err := c.Create(ctx, Jobs, "ns", job, true); err != nil {
		t.Fatal(err)
	}
	grace := int64(5)
	if err := c.Delete(ctx, Pods, "ns", "p", DeleteOptions{GracePeriodSeconds: &grace, PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	var pods List[Pod]
	if err := c.List(ctx, Pods, "ns", "a=b,c=d", &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Status.ContainerStatuses[0].State.Terminated.ExitCode != 3 || pods.Items[0].Labels["a"] != "b" {
		t.Errorf("pods %+v", pods)
	}
	stream, err := c.Logs(ctx, "ns", "p", true)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(stream)
	stream.Close()
	if string(text) != "line 1\nline 2\n" {
		t.Errorf("log %q", text)
	}
	seen := srv.requests()
	for i, want := range []request{
		{method: "POST", path: "/proxy/apis/batch/v1/namespaces/ns/jobs", query: "dryRun=All&fieldValidation=Strict", contentType: "application/json"},
		{method: "DELETE", path: "/proxy/api/v1/namespaces/ns/pods/p", contentType: "application/json"},
		{method: "GET", path: "/proxy/api/v1/namespaces/ns/pods", query: "labelSelector=a%3Db%2Cc%3Dd"},
		{method: "GET", path: "/proxy/api/v1/namespaces/ns/pods/p/log", query: "follow=true"},
	} {
		got := seen[i]
		if got.method != want.method || got.path != want.path || got.query != want.query || got.contentType != want.contentType {
			t.Errorf("request %d: %s %s?%s (%s), want %s %s?%s (%s)", i, got.method, got.path, got.query, got.contentType, want.method, want.path, want.query, want.contentType)
		}
		if got.header.Get("Impersonate-User") != "alice" || strings.Join(got.header.Values("Impersonate-Group"), ",") != "g1,g2" {
			t.Errorf("request %d: impersonation headers %v", i, got.header)
		}
	}
	if seen[0].body["kind"] != "Job" || seen[0].body["metadata"].(map[string]any)["name"] != "j" {
		t.Errorf("create body %v", seen[0].body)
	}
	if seen[1].body["kind"] != "DeleteOptions" || seen[1].body["gracePeriodSeconds"] != 5.0 || seen[1].body["propagationPolicy"] != "Background" {
		t.Errorf("delete body %v", seen[1].body)
	}
}

// TestClientErrors: a refusal carries the API server's own message and
// reason; an answer that is no Status still says its code; a server whose
// certificate is not trusted is refused.
func TestClientErrors(t *testing.T) {
	srv := newAPIServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "":
			switch r.Method {
			case http.MethodPost:
				status(w, 422, "Invalid", `Job.batch "j" is invalid: spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"`)
			case http.MethodDelete:
				status(w, 404, "NotFound", `jobs.batch "j" not found`)
			case http.MethodGet:
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(503)
				fmt.Fprint(w, "<html>down for maintenance</html>")
			}
		}
	})
	c, err := New(srv.config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = c.Create(ctx, Jobs, "ns", &Job{}, false)
	if e, ok := err.(*Error); !ok || e.Reason != "Invalid" || !strings.Contains(err.Error(), "imagePullPolicy: Unsupported value") || IsNotFound(err) {
		t.Errorf("invalid: %#v", err)
	}
	if err := c.Delete(ctx, Jobs, "ns", "j", DeleteOptions{}); !IsNotFound(err) || err.Error() != `jobs.batch "j" not found` {
		t.Errorf("not found: %v", err)
	}
	if err := c.Get(ctx, Pods, "ns", "p", &Pod{}); err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: <html>down for maintenance</html>") {
		t.Errorf("no status: %v", err)
	}
	untrusted := srv.config()
	untrusted.CAData = nil
	if c, err = New(untrusted); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, Pods, "ns", "p", &Pod{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted server: %v", err)
	}
	for _, host := range []string{"", "127.0.0.1:6443", "ftp://x"} {
		if _, err := New(&Config{Host: host}); err == nil || !strings.Contains(err.Error(), "give https://HOST:PORT") {
			t.Errorf("host %q: %v", host, err)
		}
	}
}

// TestTokenFile: a token file is read again for every request, as a
// service account's token is rotated during a run; a refused token says
// whose credentials were refused.
func TestTokenFile(t *testing.T) {
	srv := newAPIServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer second" {
			status(w, 401, "Unauthorized", "Unauthorized")
			return
		}
		fmt.Fprint(w, `{}`)
	})
	token := filepath.Join(t.TempDir(), "token")
	cfg := srv.config()
	cfg.TokenFile = token
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ token, err string }{
		{"first\n", "Unauthorized (the API server refused the credentials of the test's config)"},
		{"second\n", ""},
	} {
		if err := os.WriteFile(token, []byte(tc.token), 0o600); err != nil {
			t.Fatal(err)
		}
		err := c.Get(context.Background(), Pods, "ns", "p", &Pod{})
		if (tc.err == "" && err != nil) || (tc.err != "" && (err == nil || err.Error() != tc.err)) {
			t.Errorf("token %q: %v, want %q", tc.token, err, tc.err)
		}
	}
}

// TestExecPlugin: a credential plugin runs as kubectl runs it
// (KUBERNETES_EXEC_INFO, its env, not interactive without a terminal);
// its token is kept until it expires, and a refused one is replaced once,
// the request's body sent again.
func TestExecPlugin(t *testing.T) {
	srv := newAPIServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer token-2" && r.Header.Get("Authorization") != "Bearer token-3" {
			status(w, 401, "Unauthorized", "Unauthorized")
			return
		}
		fmt.Fprint(w, `{}`)
	})
	dir := t.TempDir()
	// Each run prints the next token, valid for an hour, and keeps its
	// input.
	expiry := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	plugin := writeFile(t, dir, "plugin", `#!/bin/sh
n=$(($(cat "$DIR/count" 2>/dev/null || echo 0) + 1))
echo $n > "$DIR/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$DIR/info-$n"
echo "plugin run $n" >&2
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"token-%s","expirationTimestamp":"`+expiry+`"}}' $n
`)
	if err := os.Chmod(plugin, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := srv.config()
	cfg.Exec = &ExecConfig{Command: plugin, APIVersion: "client.authentication.k8s.io/v1", Env: []EnvVar{{Name: "DIR", Value: dir}}, ProvideClusterInfo: true}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, ConfigMaps, "ns", &ConfigMap{ObjectMeta: ObjectMeta{Name: "cm"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, ConfigMaps, "ns", "cm", &ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	count, _ := os.ReadFile(filepath.Join(dir, "count"))
	if strings.TrimSpace(string(count)) != "2" {
		t.Errorf("the plugin ran %s times, want 2 (refused once, then kept)", count)
	}
	seen := srv.requests()
	if len(seen) != 3 || seen[1].body["metadata"] == nil {
		t.Errorf("requests %+v: want the create sent again with its body, then the get", seen)
	}
	var info struct {
		APIVersion, Kind string
		Spec             struct {
			Interactive bool `json:"interactive"`
			Cluster     struct {
				Server string `json:"server"`
				CAData []byte `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"spec"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "info-1"))
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Kind != "ExecCredential" || info.Spec.Interactive || info.Spec.Cluster.Server != srv.URL || len(info.Spec.Cluster.CAData) == 0 {
		t.Errorf("KUBERNETES_EXEC_INFO %s", data)
	}

	for _, tc := range []struct {
		exec ExecConfig
		want string
	}{
		// A plugin that is not installed says how to install it.
		{ExecConfig{Command: filepath.Join(dir, "missing"), APIVersion: "client.authentication.k8s.io/v1", InstallHint: "install it with make plugin"}, "install it with make plugin"},
		// One that prints something else.
		{ExecConfig{Command: "echo", Args: []string{"{}"}, APIVersion: "client.authentication.k8s.io/v1"}, "want an ExecCredential"},
		// An API version brokerbench does not speak.
		{ExecConfig{Command: "true", APIVersion: "client.authentication.k8s.io/v1alpha1"}, "v1 or v1beta1"},
		// A plugin that needs a terminal, which a test has not.
		{ExecConfig{Command: "true", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: "Always"}, "needs a terminal"},
	} {
		cfg := srv.config()
		cfg.Exec = &tc.exec
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stdin := os.Stdin
		os.Stdin, _ = os.Open(os.DevNull)
		err = c.Get(ctx, Pods, "ns", "p", &Pod{})
		os.Stdin.Close()
		os.Stdin = stdin
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.exec, err, tc.want)
		}
	}
}

// TestClientRetries: a request the API server asks to have again later
// (429 with Retry-After) is sent again with its body; a 500 without
// Retry-After is not.
func TestClientRetries(t *testing.T) {
	var calls int
	srv := newAPIServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		calls++
		switch {
		case r.Method == http.MethodPost && calls == 1:
			w.Header().Set("Retry-After", "1")
			status(w, 429, "TooManyRequests", "too many requests, please try again later")
		case r.Method == http.MethodPost:
			w.WriteHeader(201)
			fmt.Fprint(w, `{}`)
		default:
			status(w, 500, "InternalError", "etcd is down")
		}
	})
	c, err := New(srv.config())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), ConfigMaps, "ns", &ConfigMap{ObjectMeta: ObjectMeta{Name: "cm"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), ConfigMaps, "ns", "cm", &ConfigMap{}); err == nil || err.Error() != "etcd is down" {
		t.Errorf("500: %v", err)
	}
	seen := srv.requests()
	if len(seen) != 3 || seen[1].body["metadata"].(map[string]any)["name"] != "cm" {
		t.Errorf("requests %+v: want the create twice, with its body, and the get once", seen)
	}
}
