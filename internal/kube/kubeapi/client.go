package kubeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Resource is a kind of namespaced object, by its place in the API.
type Resource struct {
	// Prefix is the API group's path: "api/v1" for the core group,
	// "apis/GROUP/VERSION" for the others.
	Prefix string
	// Plural is the resource's name in paths ("jobs").
	Plural string
}

// The resources brokerbench uses.
var (
	ConfigMaps = Resource{"api/v1", "configmaps"}
	Services   = Resource{"api/v1", "services"}
	Pods       = Resource{"api/v1", "pods"}
	Jobs       = Resource{"apis/batch/v1", "jobs"}
)

// Client makes brokerbench's calls to one API server. It is safe for
// concurrent use.
type Client struct {
	host   *url.URL
	http   *http.Client
	source string
}

// New returns a client of the API server cfg describes.
func New(cfg *Config) (*Client, error) {
	where := ""
	if cfg.Source != "" {
		where = cfg.Source + ": "
	}
	host, err := url.Parse(cfg.Host)
	if err != nil || host.Host == "" || (host.Scheme != "https" && host.Scheme != "http") {
		return nil, fmt.Errorf("%sAPI server address %q: give https://HOST:PORT", where, cfg.Host)
	}
	t, err := cfg.Transport()
	if err != nil {
		return nil, fmt.Errorf("%s%w", where, err)
	}
	// No overall timeout: a log is followed as long as the run goes on;
	// each call is bounded by its context.
	return &Client{host: host, http: &http.Client{Transport: t}, source: cfg.Source}, nil
}

// Error is the API server's refusal of a request, from the Status it
// answered with.
type Error struct {
	// Code is the HTTP status code.
	Code int
	// Reason is the Status's reason: "NotFound", "AlreadyExists",
	// "Invalid", "Forbidden"...
	Reason string
	// Message is the API server's own explanation.
	Message string
}

func (e *Error) Error() string { return e.Message }

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Reason == "NotFound" || (e.Reason == "" && e.Code == http.StatusNotFound))
}

// Create creates obj in namespace ns, with strict field validation: a
// field the API server does not know is an error. With dryRun the server
// validates obj and stores nothing.
func (c *Client) Create(ctx context.Context, r Resource, ns string, obj any, dryRun bool) error {
	q := url.Values{"fieldValidation": {"Strict"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	return c.do(ctx, http.MethodPost, c.path(r, ns, ""), q, obj, nil)
}

// Delete deletes the object name.
func (c *Client) Delete(ctx context.Context, r Resource, ns, name string, opts DeleteOptions) error {
	body := struct {
		TypeMeta `json:",inline"`
		DeleteOptions
	}{TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}, opts}
	return c.do(ctx, http.MethodDelete, c.path(r, ns, name), nil, body, nil)
}

// Get reads the object name into into.
func (c *Client) Get(ctx context.Context, r Resource, ns, name string, into any) error {
	return c.do(ctx, http.MethodGet, c.path(r, ns, name), nil, nil, into)
}

// List reads the objects whose labels match selector ("k=v,k2=v2"; ""
// for all) into into, a *List[T].
func (c *Client) List(ctx context.Context, r Resource, ns, selector string, into any) error {
	var q url.Values
	if selector != "" {
		q = url.Values{"labelSelector": {selector}}
	}
	return c.do(ctx, http.MethodGet, c.path(r, ns, ""), q, nil, into)
}

// Logs streams the log of pod's one container; with follow, until it
// ends or ctx does. The caller closes the stream.
func (c *Client) Logs(ctx context.Context, ns, pod string, follow bool) (io.ReadCloser, error) {
	var q url.Values
	if follow {
		q = url.Values{"follow": {"true"}}
	}
	resp, err := c.send(ctx, http.MethodGet, c.path(Pods, ns, pod)+"/log", q, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// path is r's path in namespace ns, and name's if given.
func (c *Client) path(r Resource, ns, name string) string {
	p := "/" + r.Prefix + "/namespaces/" + url.PathEscape(ns) + "/" + r.Plural
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// do sends body as JSON and decodes the answer into into (nil: drops it).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, into any) error {
	resp, err := c.send(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if into == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("%s %s: the API server's answer: %w", method, path, err)
	}
	return nil
}

// maxRetries bounds how often a request the API server asks to be sent
// again later (429, or a 5xx with Retry-After) is sent again.
const maxRetries = 5

// send makes the request and returns a successful response; a refusal
// is an *Error.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body any) (*http.Response, error) {
	u := *c.host
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = q.Encode()
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return nil, err
		}
		// JSON where the API has a choice; a log is text.
		req.Header.Set("Accept", "application/json, */*")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		wait, again := retryAfter(resp)
		if !again || attempt == maxRetries {
			return nil, c.refusal(resp)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

// retryAfter says whether the API server asked for the request again
// later (too many requests, or a 5xx with Retry-After), and when.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	h := resp.Header.Get("Retry-After")
	if resp.StatusCode != http.StatusTooManyRequests && (resp.StatusCode < 500 || h == "") {
		return 0, false
	}
	secs, err := strconv.Atoi(h)
	if err != nil || secs < 1 {
		secs = 1
	}
	return min(time.Duration(secs)*time.Second, 10*time.Second), true
}

// refusal reads the *Error of a refused request and closes its body.
func (c *Client) refusal(resp *http.Response) *Error {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := statusError(resp.StatusCode, data)
	if e.Code == http.StatusUnauthorized && c.source != "" {
		e.Message += " (the API server refused the credentials of " + c.source + ")"
	}
	return e
}

// statusError reads the Status an API server answers a refusal with.
func statusError(code int, data []byte) *Error {
	var st struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	e := &Error{Code: code}
	if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
		e.Reason, e.Message = st.Reason, st.Message
	}
	if e.Message == "" {
		text := strings.TrimSpace(string(data))
		if len(text) > 300 {
			text = text[:300] + "..."
		}
		e.Message = fmt.Sprintf("the API server answered %d %s", code, http.StatusText(code))
		if text != "" {
			e.Message += ": " + text
		}
	}
	if e.Reason == "" && code == http.StatusUnauthorized {
		e.Reason = "Unauthorized"
	}
	return e
}
