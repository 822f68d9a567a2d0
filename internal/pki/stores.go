package pki

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Store types, as Java names them (ssl.truststore.type, ssl.keystore.type).
const (
	TypePEM    = "PEM"
	TypePKCS12 = "PKCS12"
	TypeJKS    = "JKS"
)

// storeType returns the type of store data holds: its given type, or,
// when none is given, what the data looks like. Java reads PKCS12 files
// as JKS key stores and the other way round, so JKS and PKCS12 are told by
// content, not by name; only PEM must be named (as in Java), but is also
// recognised.
func storeType(given string, data []byte) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(given))
	switch t {
	case "", TypeJKS, TypePKCS12, "P12", "PFX":
	case TypePEM:
		return TypePEM, nil
	default:
		return "", fmt.Errorf("store type %q is not supported: use PKCS12, JKS or PEM", given)
	}
	switch {
	case bytes.HasPrefix(data, []byte{0xfe, 0xed, 0xfe, 0xed}):
		return TypeJKS, nil
	case bytes.HasPrefix(data, []byte{0xce, 0xce, 0xce, 0xce}):
		return "", errors.New("a JCEKS store, which brokerbench cannot read: convert it to PKCS12 (keytool -importkeystore -deststoretype PKCS12)")
	case bytes.Contains(data, []byte("-----BEGIN ")):
		return TypePEM, nil
	case len(data) > 0 && data[0] == 0x30: // a DER SEQUENCE
		return TypePKCS12, nil
	}
	return "", errors.New("not a PKCS12, JKS or PEM store")
}

// ParseTrustStore returns the certificates a trust store holds. typ is
// the store's type (empty: told by content); password opens PKCS12 and
// checks JKS stores (empty: not checked, as Java does for trust stores).
func ParseTrustStore(data []byte, typ, password string) ([]*x509.Certificate, error) {
	t, err := storeType(typ, data)
	if err != nil {
		return nil, err
	}
	switch t {
	case TypePEM:
		return ParseCertificates(data)
	case TypePKCS12:
		certs, err := pkcs12.DecodeTrustStore(data, password)
		if err != nil {
			return nil, fmt.Errorf("PKCS12 trust store: %w%s", err, passwordAdvice(err, "ssl.truststore.password"))
		}
		return certs, nil
	default:
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return nil, fmt.Errorf("JKS trust store: %w%s", err, passwordAdvice(err, "ssl.truststore.password"))
		}
		var certs []*x509.Certificate
		for _, alias := range ks.Aliases() {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				continue // a key entry
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, fmt.Errorf("JKS trust store entry %q: %w", alias, err)
			}
			certs = append(certs, c)
		}
		if len(certs) == 0 {
			return nil, errors.New("the JKS trust store holds no trusted certificate entry")
		}
		return certs, nil
	}
}

// ParseKeyStore returns the client certificate and key a key store holds.
// PEM data holds the private key (unencrypted) and the certificate chain;
// PKCS12 and JKS stores are opened with storePassword, and a JKS key entry
// with keyPassword (empty: the store's, as Java does).
func ParseKeyStore(data []byte, typ, storePassword, keyPassword string) (tls.Certificate, error) {
	t, err := storeType(typ, data)
	if err != nil {
		return tls.Certificate{}, err
	}
	switch t {
	case TypePEM:
		certs, err := ParseCertificates(data)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("PEM key store: %w", err)
		}
		key, err := ParseKey(data)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("PEM key store: %w", err)
		}
		return chain(key, certs)
	case TypePKCS12:
		key, cert, cas, err := pkcs12.DecodeChain(data, storePassword)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("PKCS12 key store: %w%s", err, passwordAdvice(err, "ssl.keystore.password"))
		}
		return chain(key, append([]*x509.Certificate{cert}, cas...))
	default:
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(storePassword)); err != nil {
			return tls.Certificate{}, fmt.Errorf("JKS key store: %w%s", err, passwordAdvice(err, "ssl.keystore.password"))
		}
		if keyPassword == "" {
			keyPassword = storePassword
		}
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("JKS key store entry %q: %w (check ssl.key.password)", alias, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("JKS key store entry %q: %w", alias, err)
			}
			var certs []*x509.Certificate
			for _, c := range e.CertificateChain {
				cert, err := x509.ParseCertificate(c.Content)
				if err != nil {
					return tls.Certificate{}, fmt.Errorf("JKS key store entry %q: %w", alias, err)
				}
				certs = append(certs, cert)
			}
			return chain(key, certs)
		}
		return tls.Certificate{}, errors.New("the JKS key store holds no private key entry")
	}
}

// chain makes a TLS certificate of a key and its chain, leaf first, and
// checks that they belong together.
func chain(key any, certs []*x509.Certificate) (tls.Certificate, error) {
	if len(certs) == 0 {
		return tls.Certificate{}, errors.New("the key store holds no certificate")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	if !publicKeysEqual(signer.Public(), certs[0].PublicKey) {
		return tls.Certificate{}, errors.New("the private key does not belong to the first certificate of the key store")
	}
	tc := tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, c := range certs {
		tc.Certificate = append(tc.Certificate, c.Raw)
	}
	return tc, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

func passwordAdvice(err error, setting string) string {
	if errors.Is(err, pkcs12.ErrIncorrectPassword) || strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "digest") {
		return " (check " + setting + ")"
	}
	return ""
}

// ReadTrustStore is ParseTrustStore for a file.
func ReadTrustStore(file, typ, password string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := ParseTrustStore(data, typ, password)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return certs, nil
}

// ReadKeyStore is ParseKeyStore for a file.
func ReadKeyStore(file, typ, storePassword, keyPassword string) (tls.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return tls.Certificate{}, err
	}
	c, err := ParseKeyStore(data, typ, storePassword, keyPassword)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}
