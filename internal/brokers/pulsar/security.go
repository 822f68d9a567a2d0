package pulsar

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/pki"
)

// Listeners implements local.Securer: the binary protocol and the admin
// API in plain, and over TLS ("tls") on ports of their own. A secured
// cluster asks for a token on every listener.
func (Kind) Listeners() []string { return []string{"plain", "tls"} }

// OpenListeners implements local.Securer: none, since a secured broker
// asks every client for a token made from the cluster's password
// (authenticationEnabled, on every listener; see writeSecuritySettings).
func (Kind) OpenListeners() []string { return nil }

// ClientAuth implements local.ClientAuther: a token, not the password.
func (Kind) ClientAuth(sec *local.Security) string {
	return "a token (HS256 JWT) signed with a key made from the password in " + sec.PasswordFile + "; brokerbench's driver makes its own when it runs against this cluster, and other clients need one signed with that key (authentication.plugin and authentication.data)"
}

// The security files of a secured cluster, in its security directory
// (local.Security.Dir), each readable by its owner alone: the key the
// brokers check tokens with, the token the brokers' own clients present,
// and each node's certificate chain and key in the files Pulsar reads.
const (
	tokenKeyFile    = "pulsar-token.key"
	brokerTokenFile = "pulsar-broker.token"
)

// nodeCertFile is the file of node n's certificate chain (PEM).
func nodeCertFile(sec *local.Security, n *local.Node) string {
	return filepath.Join(sec.Dir, fmt.Sprintf("pulsar-node-%d.crt", n.ID))
}

// nodeKeyFile is the file of node n's key (PKCS#8 PEM, the form Pulsar
// reads).
func nodeKeyFile(sec *local.Security, n *local.Node) string {
	return filepath.Join(sec.Dir, fmt.Sprintf("pulsar-node-%d.key", n.ID))
}

// tokenKey is the secret key (HMAC-SHA256, 256 bits, the least Pulsar
// accepts) a secured cluster's brokers check tokens with, derived from
// the cluster's password: whoever holds the password can sign a token.
func tokenKey(password string) []byte {
	m := hmac.New(sha256.New, []byte(password))
	m.Write([]byte("brokerbench pulsar token key"))
	return m.Sum(nil)
}

// localToken returns a token (an HS256 JWT without expiry, its subject the
// role) for role, signed with the key of the cluster whose password is
// password.
func localToken(role, password string) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: role}).SignedString(tokenKey(password))
}

// localTokenAuth returns the authentication plugin and its parameters (the
// Go client's form) of a client of the local cluster whose user and
// password are given: token authentication as the user.
func localTokenAuth(user, password string) (plugin, params string, err error) {
	token, err := localToken(user, password)
	if err != nil {
		return "", "", err
	}
	b, err := json.Marshal(map[string]string{"token": token})
	return "token", string(b), err
}

// writeSecurityFiles writes a secured cluster's security files (see
// tokenKeyFile): the token key and the brokers' token from its password,
// and each node's certificate and key from its key store.
func writeSecurityFiles(c *local.Cluster, sec *local.Security) error {
	pw, err := sec.Password()
	if err != nil {
		return err
	}
	token, err := localToken(sec.Username, pw)
	if err != nil {
		return fmt.Errorf("sign the brokers' token: %w", err)
	}
	files := map[string][]byte{tokenKeyFile: tokenKey(pw), brokerTokenFile: []byte(token)}
	for _, n := range c.Nodes() {
		if !n.HasRole("broker") {
			continue
		}
		cert, key, err := pulsarKeyPair(sec.NodeKeyStore(n))
		if err != nil {
			return fmt.Errorf("node %d: %w", n.ID, err)
		}
		files[filepath.Base(nodeCertFile(sec, n))], files[filepath.Base(nodeKeyFile(sec, n))] = cert, key
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(sec.Dir, name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// pulsarKeyPair returns the certificate chain and the key of the PEM key
// store file, as Pulsar reads them: the chain as PEM certificates, the
// key as a PKCS#8 PEM.
func pulsarKeyPair(file string) (certs, key []byte, err error) {
	ks, err := pki.ReadKeyStore(file, "PEM", "", "")
	if err != nil {
		return nil, nil, err
	}
	for _, der := range ks.Certificate {
		certs = append(certs, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ks.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("key of %s in PKCS#8: %w", file, err)
	}
	return certs, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writeSecuritySettings writes to b the settings of broker node n of a
// secured cluster: the TLS listeners with the node's certificate, token
// authentication on every listener, the cluster's user a superuser (no
// authorization is asked for), and the broker's own client presenting
// the brokers' token, over TLS when the cluster serves no plain
// listener.
func writeSecuritySettings(b *strings.Builder, c *local.Cluster, n *local.Node) {
	sec := c.Security()
	if sec == nil {
		return
	}
	if c.Serving("tls") {
		fmt.Fprintf(b, "brokerServicePortTls=%d\nwebServicePortTls=%d\n", n.Ports[c.ListenerKey("tls")], n.Ports["https"])
		fmt.Fprintf(b, "tlsCertificateFilePath=%s\ntlsKeyFilePath=%s\ntlsTrustCertsFilePath=%s\n", nodeCertFile(sec, n), nodeKeyFile(sec, n), sec.CAFile)
	}
	fmt.Fprintf(b, `authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken
tokenSecretKey=file://%s
superUserRoles=%s
brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken
brokerClientAuthenticationParameters=file://%s
`, filepath.Join(sec.Dir, tokenKeyFile), sec.Username, filepath.Join(sec.Dir, brokerTokenFile))
	if !c.Serving("plain") {
		fmt.Fprintf(b, "brokerClientTlsEnabled=true\nbrokerClientTrustCertsFilePath=%s\n", sec.CAFile)
	}
}

// localAdmin is an admin client of a local node's admin API at base (plain
// HTTP), presenting the cluster's token when it is secured.
func localAdmin(c *local.Cluster, base string) (*admin, error) {
	cfg := &config{httpURL: base}
	if sec := c.Security(); sec != nil {
		pw, err := sec.Password()
		if err != nil {
			return nil, err
		}
		if cfg.authPlugin, cfg.authData, err = localTokenAuth(sec.Username, pw); err != nil {
			return nil, err
		}
	}
	return newAdmin(cfg)
}
