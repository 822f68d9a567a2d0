// Package secret expands references to secrets in config values,
// ${env:NAME} and ${file:PATH}, and remembers every value it expanded so
// that whatever brokerbench writes (results, journals, reports, progress,
// errors) can be scrubbed of them: outputs pass through Redact or Writer,
// which replace each known value with Mask.
package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Mask replaces a secret's value in outputs.
const Mask = "********"

// MinLength is the shortest secret kept out of outputs: a shorter one
// would mask every occurrence of a common string, so it is refused.
const MinLength = 4

var (
	mu      sync.RWMutex
	known   []string          // values and their escaped forms, longest first
	replace *strings.Replacer // replaces each of known with Mask
)

// reference matches ${env:NAME} and ${file:PATH}.
var reference = regexp.MustCompile(`\$\{(env|file):([^}]*)\}`)

// Expand replaces every reference in s with the secret it names: the
// environment variable NAME, or the contents of the file PATH without a
// trailing newline. It reports whether s held a reference, and registers
// each value for Redact. An unset variable, an unreadable file, and a
// value shorter than MinLength are errors that say what to do.
func Expand(s string) (string, bool, error) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var errs []error
	var values []string
	out := reference.ReplaceAllStringFunc(s, func(ref string) string {
		m := reference.FindStringSubmatch(ref)
		kind, name := m[1], m[2]
		var v string
		switch kind {
		case "env":
			val, ok := os.LookupEnv(name)
			if !ok || name == "" {
				errs = append(errs, fmt.Errorf("%s: the environment variable %q is not set: export it before the run", ref, name))
				return ref
			}
			v = val
		case "file":
			data, err := os.ReadFile(name)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w (the file must hold the secret alone)", ref, err))
				return ref
			}
			v = strings.TrimRight(string(data), "\r\n")
		}
		if len(v) < MinLength {
			errs = append(errs, fmt.Errorf("%s: the secret is %d characters long; secrets shorter than %d cannot be kept out of the outputs", ref, len(v), MinLength))
			return ref
		}
		values = append(values, v)
		return v
	})
	if err := errors.Join(errs...); err != nil {
		return s, true, err
	}
	register(values...)
	return out, out != s || len(values) > 0, nil
}

// Keep has a secret given as it is (a password in a config file) kept
// out of outputs like an expanded one. Values shorter than MinLength are
// left alone: settings that hold secrets are also redacted by name.
func Keep(value string) {
	if len(value) >= MinLength {
		register(value)
	}
}

// register remembers values, with the forms JSON and HTML escaping give
// them, for Redact.
func register(values ...string) {
	if len(values) == 0 {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, k := range known {
		seen[k] = true
	}
	for _, v := range values {
		// JSON as encoding/json writes it, with and without HTML escaping.
		j, _ := json.Marshal(v)
		var plain strings.Builder
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		for _, form := range []string{v, strings.Trim(string(j), `"`), strings.Trim(strings.TrimSpace(plain.String()), `"`), html.EscapeString(v)} {
			if !seen[form] {
				seen[form] = true
				known = append(known, form)
			}
		}
	}
	// Longest first, so that a secret containing another is masked whole.
	sort.Slice(known, func(i, j int) bool { return len(known[i]) > len(known[j]) })
	pairs := make([]string, 0, 2*len(known))
	for _, k := range known {
		pairs = append(pairs, k, Mask)
	}
	replace = strings.NewReplacer(pairs...)
}

// Redact returns s with every secret expanded so far replaced by Mask.
func Redact(s string) string {
	mu.RLock()
	r := replace
	mu.RUnlock()
	if r == nil {
		return s
	}
	return r.Replace(s)
}

// RedactBytes is Redact for a file's contents.
func RedactBytes(b []byte) []byte {
	mu.RLock()
	r := replace
	mu.RUnlock()
	if r == nil {
		return b
	}
	return []byte(r.Replace(string(b)))
}

// Writer returns a writer that redacts what it writes to w. A secret
// split across two writes is not recognised: callers write whole lines.
func Writer(w io.Writer) io.Writer { return redacting{w} }

type redacting struct{ w io.Writer }

func (r redacting) Write(p []byte) (int, error) {
	if _, err := r.w.Write(RedactBytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
