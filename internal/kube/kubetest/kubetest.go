// Package kubetest starts a real Kubernetes API server (kube-apiserver on
// etcd) for tests: manifests and client calls are then validated by
// Kubernetes itself, strict field validation included. No controllers,
// scheduler or nodes run: objects are stored, never run.
//
// kube-apiserver is built from the Go module proxy by 'make
// kube-apiserver' into the brokerbench cache; etcd comes from Debian's
// etcd-server package. Tests skip, saying how to get them, when either is
// missing; CI installs both.
package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
	"github.com/brokerbench/brokerbench/internal/pki"
)

// Version is the Kubernetes version 'make kube-apiserver' builds.
const Version = "v1.34.4"

// APIServerPath is where 'make kube-apiserver' puts the binary, unless
// BROKERBENCH_KUBE_APISERVER names another.
func APIServerPath() string {
	if p := os.Getenv("BROKERBENCH_KUBE_APISERVER"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "brokerbench", "kubernetes-"+Version, "kube-apiserver")
}

// Server is a running API server.
type Server struct {
	// Config reaches it as a cluster administrator.
	Config *kubeapi.Config
	// Kubeconfig is a kubeconfig file for it.
	Kubeconfig string
	procs      []proc
	dir        string
}

// proc is a process started; done is closed when it has exited.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts etcd on etcdPort and kube-apiserver on port, with their
// data in a temporary directory; they are stopped, by PID, when t ends.
// It skips t when the binaries are missing.
func Start(t testing.TB, etcdPort, port int) *Server {
	t.Helper()
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd not found: install Debian's etcd-server package (.ci/run does)")
	}
	apiserver := APIServerPath()
	if _, err := os.Stat(apiserver); err != nil {
		t.Skipf("kube-apiserver not found at %s: 'make kube-apiserver' builds it (about 5 minutes; .ci/run does)", apiserver)
	}
	dir := t.TempDir()
	s := &Server{dir: dir}
	t.Cleanup(s.stop)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	s.start(t, dir, "etcd", etcd, "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPort+1), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPort+1),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", etcdPort+1))
	ca, err := pki.NewAuthority("kubetest")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue("kube-apiserver", "127.0.0.1", "localhost", "kubernetes.default.svc", "10.96.0.1")
	if err != nil {
		t.Fatal(err)
	}
	caFile, servingFile, saKey, tokens := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "serving.pem"), filepath.Join(dir, "sa.pem"), filepath.Join(dir, "tokens.csv")
	store, err := serving.KeyStorePEM(ca)
	if err != nil {
		t.Fatal(err)
	}
	token := randomToken(t)
	write(t, caFile, pki.CertPEM(ca.Certificate()))
	write(t, servingFile, store)
	write(t, saKey, serviceAccountKey(t))
	write(t, tokens, []byte(token+",admin,admin,system:masters\n"))
	s.start(t, dir, "kube-apiserver", apiserver, "--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port), "--endpoint-reconciler-type", "none", "--tls-cert-file", servingFile, "--tls-private-key-file", servingFile,
		"--token-auth-file", tokens, "--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC", "--allow-privileged=true", "--cert-dir", filepath.Join(dir, "certs"))
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	s.Config = &kubeapi.Config{Host: host, BearerToken: token, CAData: pki.CertPEM(ca.Certificate()), Source: "kubetest"}
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	write(t, s.Kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kubetest, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: kubetest, context: {cluster: kubetest, user: admin}}]
current-context: kubetest
`, host, caFile, token)))
	s.awaitReady(t, host)
	return s
}

func (s *Server) start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	s.procs = append(s.procs, p)
}

// awaitReady waits until the API server reports ready and has made the
// default namespace.
func (s *Server) awaitReady(t testing.TB, host string) {
	t.Helper()
	rt, err := s.Config.Transport()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: rt, Timeout: 2 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	for {
		ready := true
		for _, path := range []string{"/readyz", "/api/v1/namespaces/default"} {
			resp, err := client.Get(host + path)
			if err != nil || resp.StatusCode != http.StatusOK {
				ready = false
			}
			if err == nil {
				resp.Body.Close()
			}
		}
		if ready {
			return
		}
		for _, p := range s.procs {
			select {
			case <-p.done:
				t.Fatalf("%s exited:\n%s", p.name, s.logTails())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready within 90 s:\n%s", s.logTails())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// logTails returns the end of every process's log.
func (s *Server) logTails() string {
	var out string
	for _, name := range []string{"etcd", "kube-apiserver"} {
		data, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		out += fmt.Sprintf("--- %s.log:\n%s\n", name, data)
	}
	return out
}

// stop stops the processes by PID, the API server first.
func (s *Server) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomToken(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// serviceAccountKey is a key pair for signing service account tokens, as
// PEM.
func serviceAccountKey(t testing.TB) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// SEC 1 form: the API server reads public keys from it too.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
