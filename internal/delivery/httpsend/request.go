package httpsend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/oncecall/oncecall/internal/delivery"
)

// MaxKeyLength bounds an idempotency key; Zendesk accepts up to 255
// characters, and the webhook contract holds to the same bound.
const MaxKeyLength = 255

// Header names.
const (
	// KeyHeader carries the idempotency key of a create.
	KeyHeader = "Idempotency-Key"
	// LookupHeader, on the answer to a create, says whether the
	// destination knew the key ("hit": the earlier ticket is returned) or
	// not ("miss"), as Zendesk answers.
	LookupHeader = "X-Idempotency-Lookup"
)

// ParseURL checks a destination URL from configuration: absolute, http or
// https, with a host, without credentials (they belong in the token) and
// without a fragment. Plain http is accepted for a loopback host, or for
// any host when allowHTTP is set. Its errors never quote the URL, which may
// carry a secret in its query.
func ParseURL(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return nil, errors.New("the destination URL must be an absolute http or https URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, errors.New("the destination URL's scheme must be https (or http)")
	case u.User != nil:
		return nil, errors.New("the destination URL must not carry credentials: configure the token instead")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, errors.New("the destination URL must not have a fragment")
	case u.Scheme == "http" && !allowHTTP && !Loopback(u.Hostname()):
		return nil, errors.New("the destination URL must be https (plain http only to a loopback host)")
	}
	return u, nil
}

// Loopback reports whether host (a name or an IP address, no port) is this
// machine: "localhost" or a loopback address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidHeaderValue reports whether v can be sent as a header value as it
// is: printable ASCII (spaces inside), nothing a header could be split on.
func ValidHeaderValue(v string) bool {
	if v == "" || v != strings.TrimSpace(v) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// CheckKey checks an idempotency key before anything is sent: 1 to
// MaxKeyLength visible ASCII characters. A bad key is a caller's mistake,
// refused without a request (Code "bad_key").
func CheckKey(key string) (delivery.Result, bool) {
	ok := key != "" && len(key) <= MaxKeyLength && !strings.Contains(key, " ") && ValidHeaderValue(key)
	if !ok {
		return delivery.Result{Outcome: delivery.Refused, Code: CodeBadKey}, false
	}
	return delivery.Result{}, true
}

// JSONRequest builds a request with body v encoded as JSON (nil: no body),
// Accept: application/json and authorization (when not "") as its
// Authorization header. The body can be replayed (GetBody is set).
func JSONRequest(ctx context.Context, method, target string, v any, authorization string) (*http.Request, error) {
	var body *bytes.Reader
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, method, target, body)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, target, nil)
	}
	if err != nil {
		return nil, errors.New(CodeBadRequest) // the error would quote the URL
	}
	if v != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return req, nil
}
