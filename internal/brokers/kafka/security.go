package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/pki"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// security is how a client connects, as the Java client's
// security.protocol, sasl.* and ssl.* settings say: tls is nil without
// TLS, mechanism nil without SASL.
type security struct {
	protocol  string
	tls       *tls.Config
	mechanism sasl.Mechanism
}

// usesTLS and usesSASL tell what a security.protocol value asks for.
func usesTLS(protocol string) bool  { return protocol == "SSL" || protocol == "SASL_SSL" }
func usesSASL(protocol string) bool { return strings.HasPrefix(protocol, "SASL_") }

// parseSecurity reads the security settings of p. What p leaves out that
// the protocol needs (a trust store, a user and password) comes from
// local, the credentials of a local cluster brokerbench started, if set;
// without a trust store, the system's roots are trusted, as the JVM's
// are by the Java client.
func parseSecurity(p workload.Properties, local *driver.Credentials) (*security, error) {
	s := &security{protocol: strings.ToUpper(must(p.Get("security.protocol")))}
	if usesTLS(s.protocol) {
		cfg, err := tlsConfig(p, local)
		if err != nil {
			return nil, err
		}
		s.tls = cfg
	}
	if usesSASL(s.protocol) {
		m, err := saslMechanism(p, local)
		if err != nil {
			return nil, err
		}
		s.mechanism = m
	}
	return s, nil
}

// tlsVersions maps Java's protocol names to Go's versions.
var tlsVersions = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

func tlsConfig(p workload.Properties, local *driver.Credentials) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	// As in the Java client: ssl.protocol is the highest version used,
	// ssl.enabled.protocols the versions allowed.
	if v, ok := p.Get("ssl.protocol"); ok && v != "TLS" {
		cfg.MaxVersion = tlsVersions[v]
	}
	if v, ok := p.Get("ssl.enabled.protocols"); ok {
		lo, hi := uint16(0), uint16(0)
		for _, name := range strings.Split(v, ",") {
			ver := tlsVersions[strings.TrimSpace(name)]
			if ver == 0 {
				continue // TLSv1 and TLSv1.1: not offered by Go, nor by Java since 2021
			}
			if lo == 0 || ver < lo {
				lo = ver
			}
			hi = max(hi, ver)
		}
		if lo == 0 {
			return nil, fmt.Errorf("ssl.enabled.protocols %q enables neither TLSv1.2 nor TLSv1.3", v)
		}
		cfg.MinVersion, cfg.MaxVersion = max(cfg.MinVersion, lo), min(cfg.MaxVersion, hi)
		if cfg.MinVersion > cfg.MaxVersion {
			return nil, fmt.Errorf("ssl.protocol %s is not among ssl.enabled.protocols %q", must(p.Get("ssl.protocol")), v)
		}
	}

	roots, err := trustAnchors(p, local)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots
	if cert, ok, err := clientCertificate(p); err != nil {
		return nil, err
	} else if ok {
		cfg.Certificates = []tls.Certificate{cert}
	}
	if v, _ := p.Get("ssl.endpoint.identification.algorithm"); v == "" {
		// No host name check, as in Java: the chain is still verified.
		driver.SkipHostname(cfg)
	}
	return cfg, nil
}

// trustAnchors returns the certificates servers are checked against: the
// trust store's, the inline ones, else the local cluster's authority, else
// nil (the system's).
func trustAnchors(p workload.Properties, local *driver.Credentials) (*x509.CertPool, error) {
	typ, _ := p.Get("ssl.truststore.type")
	var certs []*x509.Certificate
	if pemText, ok := p.Get("ssl.truststore.certificates"); ok && pemText != "" {
		c, err := pki.ParseCertificates([]byte(pemText))
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.certificates: %w", err)
		}
		certs = c
	} else if file, ok := p.Get("ssl.truststore.location"); ok && file != "" {
		pw, _ := p.Get("ssl.truststore.password")
		c, err := pki.ReadTrustStore(file, typ, pw)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		certs = c
	} else if local != nil && local.CAFile != "" {
		c, err := pki.ReadCertificates(local.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the local cluster's certificate authority: %w", err)
		}
		certs = c
	} else {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// clientCertificate returns the key store's certificate and key, for
// brokers that authenticate clients by certificate (mTLS); ok is false
// without a key store.
func clientCertificate(p workload.Properties) (tls.Certificate, bool, error) {
	typ, _ := p.Get("ssl.keystore.type")
	storePW, _ := p.Get("ssl.keystore.password")
	keyPW, _ := p.Get("ssl.key.password")
	if key, ok := p.Get("ssl.keystore.key"); ok && key != "" {
		chain, _ := p.Get("ssl.keystore.certificate.chain")
		if chain == "" {
			return tls.Certificate{}, false, errors.New("ssl.keystore.key needs ssl.keystore.certificate.chain, the key's certificates in PEM")
		}
		c, err := pki.ParseKeyStore([]byte(key+"\n"+chain), pki.TypePEM, "", "")
		if err != nil {
			return tls.Certificate{}, false, fmt.Errorf("ssl.keystore.key: %w", err)
		}
		return c, true, nil
	}
	file, ok := p.Get("ssl.keystore.location")
	if !ok || file == "" {
		return tls.Certificate{}, false, nil
	}
	c, err := pki.ReadKeyStore(file, typ, storePW, keyPW)
	if err != nil {
		return tls.Certificate{}, false, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	return c, true, nil
}

// saslMechanism returns the SASL mechanism sasl.mechanism names, with the
// credentials of sasl.jaas.config, or else local's.
func saslMechanism(p workload.Properties, local *driver.Credentials) (sasl.Mechanism, error) {
	mech, ok := p.Get("sasl.mechanism")
	if !ok || mech == "" {
		return nil, errors.New("sasl.mechanism is not set, and Kafka's default, GSSAPI (Kerberos), is not supported: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	var user, pass string
	token := false
	if jaas, ok := p.Get("sasl.jaas.config"); ok && jaas != "" {
		module, opts, err := parseJAAS(jaas)
		if err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: %w", err)
		}
		want := map[string]string{"PLAIN": "PlainLoginModule", "SCRAM-SHA-256": "ScramLoginModule", "SCRAM-SHA-512": "ScramLoginModule"}[mech]
		if !strings.HasSuffix(module, "."+want) && module != want {
			return nil, fmt.Errorf("sasl.jaas.config names %s, but sasl.mechanism %s needs org.apache.kafka.common.security.%s.%s",
				module, mech, strings.ToLower(strings.TrimSuffix(want, "LoginModule")), want)
		}
		user, pass = opts["username"], opts["password"]
		if user == "" || pass == "" {
			return nil, errors.New("sasl.jaas.config: username=\"...\" and password=\"...\" are both needed")
		}
		secret.Keep(pass)
		token = strings.EqualFold(opts["tokenauth"], "true")
	} else if local != nil && local.Username != "" {
		user, pass = local.Username, local.Password
	} else {
		return nil, fmt.Errorf("sasl.jaas.config is not set: give the user, as in %s required username=\"USER\" password=\"${env:KAFKA_PASSWORD}\";",
			map[bool]string{true: "org.apache.kafka.common.security.plain.PlainLoginModule", false: "org.apache.kafka.common.security.scram.ScramLoginModule"}[mech == "PLAIN"])
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass, IsToken: token}.AsSha256Mechanism(), nil
	default:
		return scram.Auth{User: user, Pass: pass, IsToken: token}.AsSha512Mechanism(), nil
	}
}

// parseJAAS parses a JAAS configuration as Java's sasl.jaas.config holds
// it: one login module, its control flag, options as key=value (values
// quoted or not) and a closing semicolon.
func parseJAAS(s string) (module string, options map[string]string, err error) {
	r := []rune(strings.TrimSpace(s))
	i := 0
	skip := func() {
		for i < len(r) && unicode.IsSpace(r[i]) {
			i++
		}
	}
	word := func() string {
		start := i
		for i < len(r) && !unicode.IsSpace(r[i]) && r[i] != '=' && r[i] != ';' && r[i] != '"' {
			i++
		}
		return string(r[start:i])
	}
	module = word()
	if module == "" {
		return "", nil, errors.New(`expected a login module class, as in: org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`)
	}
	skip()
	switch flag := word(); flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", nil, fmt.Errorf("control flag %q after %s: expected required, requisite, sufficient or optional", flag, module)
	}
	options = map[string]string{}
	for {
		skip()
		if i >= len(r) {
			return "", nil, errors.New("missing the closing ';'")
		}
		if r[i] == ';' {
			i++
			skip()
			if i < len(r) {
				return "", nil, errors.New("only one login module is supported: text follows the first ';'")
			}
			return module, options, nil
		}
		key := word()
		skip()
		if key == "" || i >= len(r) || r[i] != '=' {
			return "", nil, fmt.Errorf("option %q: expected key=value", key)
		}
		i++
		skip()
		var val string
		if i < len(r) && r[i] == '"' {
			i++
			var b strings.Builder
			for ; i < len(r) && r[i] != '"'; i++ {
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				b.WriteRune(r[i])
			}
			if i >= len(r) {
				return "", nil, fmt.Errorf("option %s: unterminated quoted value", key)
			}
			i++
			val = b.String()
		} else {
			val = word()
		}
		options[key] = val
	}
}

// securityAdvice says what to check when err is an authentication or TLS
// failure; "" otherwise.
func securityAdvice(err error) string {
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return "authentication failed: check the user name and password in sasl.jaas.config, and sasl.mechanism"
	case errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return "the broker does not accept this sasl.mechanism on this listener"
	}
	if advice := driver.TLSAdvice(err); advice != "" {
		return strings.NewReplacer("give a trust store", "set ssl.truststore.location to a trust store", "turn the host name check off", "set ssl.endpoint.identification.algorithm to empty", "whether TLS is on", "security.protocol").Replace(advice)
	}
	return ""
}
