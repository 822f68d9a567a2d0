package driver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"

	"github.com/brokerbench/brokerbench/internal/pki"
)

// TLSDefaults are the TLS settings every driver without TLS settings of
// its broker's own (all but Kafka) takes in commonConfig, with their
// defaults: merge them into the driver's "common" defaults.
//
//   - tls: true to connect over TLS; a URL's scheme (amqps://,
//     rediss://, tls://) also says so.
//   - tlsTrustStore: the authorities servers are checked against, a PEM,
//     PKCS12 or JKS file (default: the system's; for a local cluster
//     brokerbench secured, its own); tlsTrustStorePassword opens it.
//   - tlsKeyStore: the client's key and certificate, for servers that
//     check clients' certificates (PEM with an unencrypted key, PKCS12
//     or JKS); tlsKeyStorePassword opens it.
//   - tlsVerifyHostname: false skips the check that the server's
//     certificate names the host dialed (the chain is still checked).
var TLSDefaults = map[string]string{
	"tls": "false", "tlsTrustStore": "", "tlsTrustStorePassword": "", "tlsKeyStore": "", "tlsKeyStorePassword": "", "tlsVerifyHostname": "true",
}

// TLSKeys are the keys of TLSDefaults.
var TLSKeys = []string{"tls", "tlsTrustStore", "tlsTrustStorePassword", "tlsKeyStore", "tlsKeyStorePassword", "tlsVerifyHostname"}

// ClientTLS returns the TLS config of s's common TLS settings (see
// TLSDefaults), or nil when neither the setting tls nor the caller
// (byScheme: the URL's scheme asks for TLS) turns it on. Problems are
// recorded in s. local, if set, are the credentials of the local cluster
// in use: its authority is trusted when no trust store is given.
func ClientTLS(s *Settings, byScheme bool, local *Credentials) *tls.Config {
	if !s.Bool("common", "tls") && !byScheme {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	trust, pw := s.String("common", "tlsTrustStore"), s.String("common", "tlsTrustStorePassword")
	if trust == "" && local != nil {
		trust = local.CAFile
	}
	if trust != "" {
		certs, err := pki.ReadTrustStore(trust, "", pw)
		if err != nil {
			s.Fail("common", "tlsTrustStore", "%v", err)
			return nil
		}
		cfg.RootCAs = x509.NewCertPool()
		for _, c := range certs {
			cfg.RootCAs.AddCert(c)
		}
	}
	if ks := s.String("common", "tlsKeyStore"); ks != "" {
		pw := s.String("common", "tlsKeyStorePassword")
		c, err := pki.ReadKeyStore(ks, "", pw, pw)
		if err != nil {
			s.Fail("common", "tlsKeyStore", "%v", err)
			return nil
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	if !s.Bool("common", "tlsVerifyHostname") {
		SkipHostname(cfg)
	}
	return cfg
}

// SkipHostname has cfg check the server's certificate chain against its
// roots (nil: the system's) but not the name it was issued to, as Java
// clients do without endpoint identification.
func SkipHostname(cfg *tls.Config) {
	roots := cfg.RootCAs
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// DialTLS wraps dial in a TLS handshake with cfg, checking the server's
// name against the host dialed unless cfg names one.
func DialTLS(dial func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.ServerName = host
			}
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return conn, nil
	}
}

// TLSAdvice says what to check when err is a failed TLS handshake: an
// untrusted or misnamed certificate, or a server that does not speak TLS;
// "" for other errors.
func TLSAdvice(err error) string {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is not signed by an authority brokerbench trusts: give a trust store holding the cluster's CA"
	case errors.As(err, &hostname):
		return "the server's certificate does not name the address connected to: connect by a name it holds, or turn the host name check off"
	case errors.As(err, &record):
		return "the server does not speak TLS on this port: check the port and whether TLS is on"
	}
	return ""
}
