package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/local"
)

// TestPrintStatusSaysHowClientsAuthenticate: a secured cluster's status
// names the user and password file, unless its kind's clients present
// something else (a token, a certificate), which it names instead.
func TestPrintStatusSaysHowClientsAuthenticate(t *testing.T) {
	sec := &local.Security{CAFile: "/s/ca.pem", ClientKeyStore: "/s/client.pem", Username: local.Username, PasswordFile: "/s/password"}
	for _, tc := range []struct {
		clientAuth, want, not string
	}{
		{"", "user brokerbench, password in /s/password", "clients:"},
		{"TLS with the certificate in /s/client.pem", "clients: TLS with the certificate in /s/client.pem", "password in"},
	} {
		var out bytes.Buffer
		printStatus(IO{Out: &out, Err: &out}, local.Status{Kind: "k", Listeners: []string{"plain", "tls"}, Security: sec, ClientAuth: tc.clientAuth, StateDir: "/s"})
		if !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), tc.not) {
			t.Errorf("client auth %q: status\n%s\nwant %q, without %q", tc.clientAuth, out.String(), tc.want, tc.not)
		}
	}
}
