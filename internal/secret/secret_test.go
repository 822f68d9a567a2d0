package secret

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpandAndRedact: environment and file references expand to their
// secrets, which every later output loses, escaped forms included.
func TestExpandAndRedact(t *testing.T) {
	t.Setenv("BB_SECRET_TEST", `pa"ss<word>`)
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("file-secret-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, ref, err := Expand("user:${env:BB_SECRET_TEST}@host ${file:" + f + "}")
	if err != nil || !ref || got != `user:pa"ss<word>@host file-secret-42` {
		t.Fatalf("Expand = %q, %v, %v", got, ref, err)
	}
	for in, want := range map[string]string{
		`url amqp://u:pa"ss<word>@h`:     "url amqp://u:" + Mask + "@h",
		`{"v":"pa\"ss\u003cword\u003e"}`: `{"v":"` + Mask + `"}`,
		`{"v":"pa\"ss<word>"}`:           `{"v":"` + Mask + `"}`,
		`<td>pa&#34;ss&lt;word&gt;</td>`: "<td>" + Mask + "</td>",
		"token file-secret-42.":          "token " + Mask + ".",
		"nothing secret":                 "nothing secret",
	} {
		if r := Redact(in); r != want {
			t.Errorf("Redact(%q) = %q, want %q", in, r, want)
		}
	}
	var buf bytes.Buffer
	if n, err := Writer(&buf).Write([]byte("line with file-secret-42\n")); err != nil || n != 25 || strings.Contains(buf.String(), "file-secret-42") {
		t.Errorf("Writer wrote %q (%d, %v)", buf.String(), n, err)
	}
}

// TestExpandErrors: an unset variable, a missing file and a short secret
// are errors naming the reference; a value without a reference is kept.
func TestExpandErrors(t *testing.T) {
	t.Setenv("BB_SHORT", "abc")
	for in, want := range map[string]string{
		"${env:BB_NOT_SET_ANYWHERE}": `"BB_NOT_SET_ANYWHERE" is not set`,
		"${file:/nonexistent/x}":     "no such file",
		"${env:BB_SHORT}":            "3 characters long",
	} {
		if _, ref, err := Expand(in); err == nil || !ref || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in) {
			t.Errorf("Expand(%q): %v (reference %v); want an error with %q", in, err, ref, want)
		}
	}
	if v, ref, err := Expand("plain $HOME {x}"); v != "plain $HOME {x}" || ref || err != nil {
		t.Errorf("a plain value: %q %v %v", v, ref, err)
	}
}

// FuzzExpand: any value expands or fails without panicking, and what it
// registers is never shown by Redact.
func FuzzExpand(f *testing.F) {
	f.Add("${env:HOME}")
	f.Add("a${file:}b${env:}")
	f.Add("${env:PATH}${env:PATH}")
	f.Fuzz(func(t *testing.T, s string) {
		v, _, err := Expand(s)
		if err == nil && v != s && len(Redact(v)) > 0 && Redact(v) == v {
			t.Errorf("expanded %q to %q, which Redact leaves as it is", s, v)
		}
	})
}
