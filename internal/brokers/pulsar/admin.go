package pulsar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar/auth"
)

// admin calls Pulsar's admin REST API (version 2). It is safe for
// concurrent use.
type admin struct {
	base string // http(s)://host:port
	// spares are other brokers' admin APIs, which a read is sent to in
	// turn when base does not answer (a broker that is down).
	spares []string
	hc     *http.Client
}

// newAdmin returns an admin client of c's admin URL, TLS and
// authentication.
func newAdmin(c *config) (*admin, error) {
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: c.tls}
	if c.authPlugin != "" {
		p, err := auth.NewProvider(c.authPlugin, c.authData)
		if err == nil {
			err = p.Init()
		}
		if err == nil {
			err = p.WithTransport(rt)
		}
		if err != nil {
			return nil, fmt.Errorf("pulsar admin authentication %q: %w", c.authPlugin, err)
		}
		rt = p
	}
	spares := make([]string, len(c.spareHTTPURLs))
	for i, u := range c.spareHTTPURLs {
		spares[i] = strings.TrimRight(u, "/")
	}
	return &admin{base: strings.TrimRight(c.httpURL, "/"), spares: spares, hc: &http.Client{Transport: rt}}, nil
}

// statusError is an admin call's answer other than 2xx.
type statusError struct {
	method, path string
	code         int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.path, e.code, e.body)
}

// hasStatus says whether err is an admin answer with HTTP status code.
func hasStatus(err error, code int) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == code
}

// do calls method on path with body encoded as JSON (nil: none), and
// decodes a 2xx answer into out (nil: discarded). A GET, which is safe
// to repeat, goes to each spare in turn while none has answered (any
// HTTP status is an answer); other methods go to base alone.
func (a *admin) do(ctx context.Context, method, path string, body, out any) error {
	answered, err := a.doAt(ctx, a.base, method, path, body, out)
	if method != http.MethodGet || len(a.spares) == 0 {
		return err
	}
	for _, base := range a.spares {
		if answered || ctx.Err() != nil {
			return err
		}
		answered, err = a.doAt(ctx, base, method, path, body, out)
	}
	if !answered {
		return fmt.Errorf("none of the %d admin APIs answered, the last: %w", 1+len(a.spares), err)
	}
	return err
}

// doAt is do of the admin API at base; answered says whether it gave
// an HTTP answer.
func (a *admin) doAt(ctx context.Context, base, method, path string, body, out any) (answered bool, err error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return false, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return true, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return true, &statusError{method: method, path: path, code: resp.StatusCode, body: reason(data)}
	}
	if out == nil {
		return true, nil
	}
	if s, ok := out.(*string); ok {
		*s = strings.Trim(strings.TrimSpace(string(data)), `"`)
		return true, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return true, fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return true, nil
}

// reason returns the broker's explanation in an error answer: its JSON
// "reason" field, or else the text, shortened.
func reason(body []byte) string {
	var r struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &r) == nil && r.Reason != "" {
		return r.Reason
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// topicPath is the admin path of a persistent topic.
func topicPath(tenant, namespace, topic string) string {
	return "/admin/v2/persistent/" + url.PathEscape(tenant) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(topic)
}

// namespacePath is the admin path of a namespace.
func namespacePath(tenant, namespace string) string {
	return "/admin/v2/namespaces/" + url.PathEscape(tenant) + "/" + url.PathEscape(namespace)
}

// topicStats are the fields of a topic's stats the driver reads.
type topicStats struct {
	// MsgInCounter counts the messages the topic took since a broker
	// last loaded it.
	MsgInCounter int64 `json:"msgInCounter"`
}

// parseStats decodes a topic's (or partitioned topic's) stats.
func parseStats(data []byte) (topicStats, error) {
	var s topicStats
	if err := json.Unmarshal(data, &s); err != nil {
		return topicStats{}, fmt.Errorf("decode topic stats: %w", err)
	}
	if s.MsgInCounter < 0 {
		return topicStats{}, fmt.Errorf("topic stats: negative msgInCounter %d", s.MsgInCounter)
	}
	return s, nil
}
