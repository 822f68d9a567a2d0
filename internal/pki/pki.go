// Package pki makes the certificates of brokers brokerbench runs with TLS:
// a certificate authority of its own, and certificates it signs for broker
// nodes and clients, written as PEM files that Java (Kafka's PEM key
// stores), Go and the brokers' own TLS libraries read.
//
// Keys are ECDSA P-256: generated in microseconds, and TLS with them costs
// what it costs with the RSA keys of most managed clusters once the
// handshake is done (the bulk cipher is AES-GCM either way).
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// Authority is a certificate authority that signs certificates. It is
// safe for concurrent use.
type Authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// validity is how long certificates are valid; they are made anew with
// each new local cluster.
const validity = 5 * 365 * 24 * time.Hour

// NewAuthority returns a new self-signed authority named name.
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"brokerbench"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{cert: cert, key: key}, nil
}

// LoadAuthority reads an authority written by WriteFiles: its certificate
// and key files.
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	certs, err := ReadCertificates(certFile)
	if err != nil {
		return nil, err
	}
	key, err := readKey(keyFile)
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an ECDSA key", keyFile)
	}
	return &Authority{cert: certs[0], key: ec}, nil
}

// Certificate is the authority's certificate.
func (a *Authority) Certificate() *x509.Certificate { return a.cert }

// Issued is a certificate the authority signed and its private key.
type Issued struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Issue signs a certificate for name, valid for TLS servers and clients
// alike, whose subject alternative names are hosts: IP addresses and DNS
// names.
func (a *Authority) Issue(name string, hosts ...string) (*Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"brokerbench"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Issued{Cert: cert, Key: key}, nil
}

// WriteFiles writes the authority's certificate to certFile (readable by
// all) and its key to keyFile (readable by its owner alone).
func (a *Authority) WriteFiles(certFile, keyFile string) error {
	if err := os.WriteFile(certFile, certPEM(a.cert), 0o644); err != nil {
		return err
	}
	key, err := keyPEM(a.key)
	if err != nil {
		return err
	}
	return os.WriteFile(keyFile, key, 0o600)
}

// KeyStorePEM returns the issued key (unencrypted PKCS#8) followed by its
// certificate chain, the authority's last: the form of a PEM key store
// file for Kafka (ssl.keystore.type=PEM) and for Go.
func (i *Issued) KeyStorePEM(a *Authority) ([]byte, error) {
	key, err := keyPEM(i.Key)
	if err != nil {
		return nil, err
	}
	return append(append(key, certPEM(i.Cert)...), certPEM(a.cert)...), nil
}

// CertPEM is the certificate in PEM.
func CertPEM(c *x509.Certificate) []byte { return certPEM(c) }

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ReadCertificates returns the certificates in a PEM file, in order.
func ReadCertificates(file string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := ParseCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return certs, nil
}

// ReadPool returns the certificates of a PEM file as a pool of trusted
// roots.
func ReadPool(file string) (*x509.CertPool, error) {
	certs, err := ReadCertificates(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// ParseCertificates returns the certificates in PEM data, in order; other
// blocks are skipped. No certificate at all is an error.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
	}
	return certs, nil
}

func readKey(file string) (any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return key, nil
}

// ParseKey returns the first private key in PEM data: PKCS#8 ("PRIVATE
// KEY"), PKCS#1 ("RSA PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY"). An
// encrypted key is an error that says how to decrypt it.
func ParseKey(data []byte) (any, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("no PEM private key (-----BEGIN PRIVATE KEY-----) in it")
		}
		switch b.Type {
		case "PRIVATE KEY":
			return x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(b.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("the private key is encrypted, which brokerbench cannot read in PEM: decrypt it (openssl pkcs8 -topk8 -nocrypt -in KEY) or use a PKCS12 key store")
		}
	}
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
