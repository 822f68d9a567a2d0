package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

func newIssued(t *testing.T) (*Authority, *Issued) {
	t.Helper()
	ca, err := NewAuthority("test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("node", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return ca, leaf
}

// TestIssuedCertificateVerifies checks that an issued certificate verifies
// against its authority for its hosts, and not for others.
func TestIssuedCertificateVerifies(t *testing.T) {
	ca, leaf := newIssued(t)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	for host, ok := range map[string]bool{"127.0.0.1": true, "localhost": true, "127.0.0.2": false, "example.com": false} {
		_, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if (err == nil) != ok {
			t.Errorf("verify for %s: %v, want valid=%v", host, err, ok)
		}
	}
	other, _ := NewAuthority("other")
	others := x509.NewCertPool()
	others.AddCert(other.Certificate())
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: others}); err == nil {
		t.Error("a certificate verified against an authority that did not sign it")
	}
}

func TestAuthorityFilesRoundTrip(t *testing.T) {
	ca, _ := newIssued(t)
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	if err := ca.WriteFiles(cf, kf); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(kf); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	back, err := LoadAuthority(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := back.Issue("x", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
		t.Errorf("a certificate issued by the reloaded authority does not verify: %v", err)
	}
}

// TestStoresRoundTrip writes the same trust anchor and client key in
// every store type and reads them back, typed and told by content.
func TestStoresRoundTrip(t *testing.T) {
	ca, leaf := newIssued(t)
	pemKS, err := leaf.KeyStorePEM(ca)
	if err != nil {
		t.Fatal(err)
	}
	p12TS, err := pkcs12.Modern2023.EncodeTrustStore([]*x509.Certificate{ca.Certificate()}, "trustpw")
	if err != nil {
		t.Fatal(err)
	}
	p12KS, err := pkcs12.Modern2023.Encode(leaf.Key, leaf.Cert, []*x509.Certificate{ca.Certificate()}, "storepw")
	if err != nil {
		t.Fatal(err)
	}
	jksTS, jksKS := jks(t, ca, leaf, "trustpw", "storepw")

	trusts := map[string][]byte{"PEM": CertPEM(ca.Certificate()), "PKCS12": p12TS, "JKS": jksTS}
	for typ, data := range trusts {
		for _, given := range []string{typ, ""} {
			certs, err := ParseTrustStore(data, given, "trustpw")
			if err != nil {
				t.Errorf("trust store %s (given %q): %v", typ, given, err)
				continue
			}
			if len(certs) != 1 || !certs[0].Equal(ca.Certificate()) {
				t.Errorf("trust store %s: got %d certificates, not the authority", typ, len(certs))
			}
		}
	}
	if _, err := ParseTrustStore(p12TS, "PKCS12", "wrong"); err == nil || !strings.Contains(err.Error(), "ssl.truststore.password") {
		t.Errorf("a wrong PKCS12 password: %v, want advice to check ssl.truststore.password", err)
	}
	if _, err := ParseTrustStore(jksTS, "JKS", "wrong"); err == nil {
		t.Error("a wrong JKS password was accepted")
	}

	keys := map[string][]byte{"PEM": pemKS, "PKCS12": p12KS, "JKS": jksKS}
	for typ, data := range keys {
		c, err := ParseKeyStore(data, typ, "storepw", "")
		if err != nil {
			t.Errorf("key store %s: %v", typ, err)
			continue
		}
		if !c.Leaf.Equal(leaf.Cert) || len(c.Certificate) != 2 {
			t.Errorf("key store %s: leaf or chain of %d wrong", typ, len(c.Certificate))
		}
		checkHandshake(t, ca, leaf, c)
	}
	// A key that is not the certificate's.
	_, other := newIssued(t)
	mixed := append(append([]byte{}, pemKS[:bytes.Index(pemKS, []byte("-----BEGIN CERTIFICATE"))]...), CertPEM(other.Cert)...)
	if _, err := ParseKeyStore(mixed, "PEM", "", ""); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("a key with another's certificate: %v", err)
	}
	if _, err := ParseTrustStore([]byte{0xce, 0xce, 0xce, 0xce, 1}, "", ""); err == nil || !strings.Contains(err.Error(), "JCEKS") {
		t.Errorf("JCEKS: %v", err)
	}
	if _, err := ParseTrustStore([]byte("x"), "BKS", ""); err == nil || !strings.Contains(err.Error(), "PKCS12, JKS or PEM") {
		t.Errorf("an unknown type: %v", err)
	}
}

// jks returns a JKS trust store holding ca and a JKS key store holding
// leaf's key and chain.
func jks(t *testing.T, ca *Authority, leaf *Issued, trustPW, storePW string) (trust, key []byte) {
	t.Helper()
	ts := keystore.New()
	if err := ts.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: time.Now(),
		Certificate: keystore.Certificate{Type: "X509", Content: ca.Certificate().Raw}}); err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	if err := ts.Store(&tb, []byte(trustPW)); err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	der, _ := x509.MarshalPKCS8PrivateKey(leaf.Key)
	if err := ks.SetPrivateKeyEntry("client", keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: leaf.Cert.Raw}, {Type: "X509", Content: ca.Certificate().Raw}}}, []byte(storePW)); err != nil {
		t.Fatal(err)
	}
	var kb bytes.Buffer
	if err := ks.Store(&kb, []byte(storePW)); err != nil {
		t.Fatal(err)
	}
	return tb.Bytes(), kb.Bytes()
}

// checkHandshake runs a TLS handshake with client authentication between
// a server holding leaf and a client holding client.
func checkHandshake(t *testing.T, ca *Authority, leaf *Issued, client tls.Certificate) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	server := tls.Certificate{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			err = c.(*tls.Conn).Handshake()
			c.Close()
		}
		done <- err
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}})
	if err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Errorf("server handshake: %v", err)
	}
}

// TestJavaMadeStores reads stores that Java's keytool made, as users
// have them. It needs keytool, which comes with the Java that runs the
// local brokers.
func TestJavaMadeStores(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (Java) is not installed")
	}
	ca, _ := newIssued(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, CertPEM(ca.Certificate()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"PKCS12", "JKS"} {
		store := filepath.Join(dir, "trust."+strings.ToLower(typ))
		out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", caFile,
			"-keystore", store, "-storetype", typ, "-storepass", "changeit").CombinedOutput()
		if err != nil {
			t.Fatalf("keytool %s: %v\n%s", typ, err, out)
		}
		certs, err := ReadTrustStore(store, typ, "changeit")
		if err != nil {
			t.Errorf("keytool's %s trust store: %v", typ, err)
		} else if len(certs) != 1 || !certs[0].Equal(ca.Certificate()) {
			t.Errorf("keytool's %s trust store: %d certificates, not the authority", typ, len(certs))
		}
		// Java's default type is JKS and reads PKCS12 stores too.
		if _, err := ReadTrustStore(store, "JKS", "changeit"); err != nil {
			t.Errorf("keytool's %s trust store read as type JKS: %v", typ, err)
		}
	}
	// A key pair keytool generated, in a PKCS12 key store.
	store := filepath.Join(dir, "client.p12")
	out, err := exec.Command(keytool, "-genkeypair", "-alias", "client", "-keyalg", "EC", "-dname", "CN=client",
		"-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput()
	if err != nil {
		t.Fatalf("keytool -genkeypair: %v\n%s", err, out)
	}
	if _, err := ReadKeyStore(store, "PKCS12", "changeit", ""); err != nil {
		t.Errorf("keytool's PKCS12 key store: %v", err)
	}
}

func FuzzParseTrustStore(f *testing.F) {
	ca, _ := NewAuthority("fuzz")
	p12, _ := pkcs12.Modern2023.EncodeTrustStore([]*x509.Certificate{ca.Certificate()}, "pw")
	f.Add(CertPEM(ca.Certificate()), "", "")
	f.Add(p12, "PKCS12", "pw")
	f.Add([]byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, "JKS", "pw")
	f.Fuzz(func(t *testing.T, data []byte, typ, password string) {
		certs, err := ParseTrustStore(data, typ, password)
		if err == nil && len(certs) == 0 {
			t.Error("no error and no certificate")
		}
	})
}

func FuzzParseKeyStore(f *testing.F) {
	ca, _ := NewAuthority("fuzz")
	leaf, _ := ca.Issue("x", "127.0.0.1")
	pemKS, _ := leaf.KeyStorePEM(ca)
	p12, _ := pkcs12.Modern2023.WithRand(rand.Reader).Encode(leaf.Key, leaf.Cert, nil, "pw")
	f.Add(pemKS, "PEM", "", "")
	f.Add(p12, "", "pw", "")
	f.Fuzz(func(t *testing.T, data []byte, typ, storePW, keyPW string) {
		c, err := ParseKeyStore(data, typ, storePW, keyPW)
		if err == nil && (c.Leaf == nil || c.PrivateKey == nil) {
			t.Error("no error and no key or certificate")
		}
	})
}
