package httpsend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Limits of what is accepted from a destination.
const (
	// MaxRetryAfter caps the wait a destination may ask for.
	MaxRetryAfter = time.Hour
	// MaxIDBytes bounds a destination's ticket id, which reaches the
	// model: an id is 1 to MaxIDBytes of IDCharacters.
	MaxIDBytes = 64
	// MaxURLBytes bounds a destination's ticket URL; a longer one is dropped.
	MaxURLBytes = 2048
)

// IDCharacters are the characters a destination's ticket id may have:
// enough for numbers, keys such as "HD-7" or "ABC-123" and UUIDs, and too
// few for a sentence addressed to the model.
const IDCharacters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:"

// Result codes, safe to log: none quotes the ticket, a credential, a URL or
// the destination's answer. A status without a name of its own is
// "http_<status>" (StatusCode).
const (
	CodeCreated           = "created"
	CodeReplayed          = "replayed" // the destination recognized the key and returned the earlier ticket
	CodeFound             = "found"
	CodeFoundSeveral      = "found_several" // more than one ticket has the external id
	CodeAbsent            = "absent"
	CodeUnauthorized      = "unauthorized" // 401
	CodeForbidden         = "forbidden"    // 403
	CodeNoID              = "no_id"        // a 200/201 without a usable ticket id
	CodeBadAnswer         = "bad_answer"   // an answer not of the expected shape
	CodeAnswerTooLarge    = "answer_too_large"
	CodeAnswerLost        = "answer_lost"
	CodeConnectionClosed  = "connection_closed" // the connection ended before a whole answer
	CodeReset             = "reset"
	CodeTimeout           = "timeout"
	CodeCanceled          = "canceled"
	CodeNotSent           = "not_sent" // a connection, but the request was not wholly written
	CodeConnectionRefused = "connection_refused"
	CodeDNS               = "dns"
	CodeTLS               = "tls"
	CodeConnectTimeout    = "connect_timeout"
	CodeConnectFailed     = "connect_failed"
	CodeBadRequest        = "bad_request"        // the request could not be built
	CodeBadKey            = "bad_key"            // the idempotency key cannot be sent (CheckKey)
	CodeLookupUnsupported = "lookup_unsupported" // Lookup on a destination without it
)

// StatusCode is the Code of an answer with status s.
func StatusCode(s int) string {
	switch s {
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	}
	return "http_" + strconv.Itoa(s)
}

// FailureResult is the Result of a request that got no answer (err from
// Send). A create that may have been received is Ambiguous; anything else
// is Unavailable: nothing was sent, or (for a lookup) nothing was learned.
func FailureResult(err error, create bool) delivery.Result {
	var f *TransportError
	if !errors.As(err, &f) {
		f = &TransportError{Code: CodeBadRequest, err: err}
	}
	if create && f.MaybeSent {
		return delivery.Result{Outcome: delivery.Ambiguous, Code: f.Code}
	}
	return delivery.Result{Outcome: delivery.Unavailable, Code: f.Code}
}

// CreateResult applies the rules every adapter shares to the answer to a
// create. receipt reads the ticket from a 200 or 201 answer; dedup says
// whether the destination deduplicates by Idempotency-Key.
//
//   - 200/201 with a usable id: Created. 2xx otherwise: Ambiguous.
//   - 401, 403: Unavailable with Auth.
//   - 408: Ambiguous. 409 (the same key still being processed):
//     Unavailable when the destination deduplicates, else Ambiguous.
//   - 429: Unavailable. 5xx: Ambiguous. Both carry RetryAfter.
//   - 3xx: Ambiguous (a create may answer 303 See Other).
//   - Other 4xx: Refused, with the destination's words in Reason.
func CreateResult(a Answer, dedup bool, receipt func(Answer) (delivery.Receipt, bool)) delivery.Result {
	r := delivery.Result{Status: a.Status, Code: StatusCode(a.Status), RetryAfter: RetryAfter(a.Header.Get("Retry-After"), time.Now())}
	s := a.Status
	switch {
	case s == http.StatusOK || s == http.StatusCreated:
		r.Outcome = delivery.Ambiguous
		if a.BodyCode != "" {
			r.Code = a.BodyCode
			return r
		}
		rc, ok := receipt(a)
		if !ok || strings.TrimSpace(rc.ID) == "" {
			r.Code = CodeNoID
			return r
		}
		if rc, ok = CleanReceipt(rc, a.Host); !ok {
			r.Code = CodeBadAnswer // an id oncecall will not store or show
			return r
		}
		r.Outcome, r.Receipt, r.Code = delivery.Created, rc, CodeCreated
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		r.Outcome, r.Auth = delivery.Unavailable, true
	case s == http.StatusTooManyRequests:
		r.Outcome = delivery.Unavailable
	case s == http.StatusConflict && dedup:
		r.Outcome = delivery.Unavailable
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusConflict:
		r.Outcome, r.Reason = delivery.Refused, Reason(a.Body)
	default: // other 2xx, 3xx, 408, 409 without dedup, 5xx, anything else
		r.Outcome = delivery.Ambiguous
	}
	return r
}

// Lookup sends a lookup, a GET of target with authorization (none when
// empty), and reads its answer with LookupResult, tickets listing the
// answer's tickets.
func (c *Client) Lookup(ctx context.Context, target, authorization string, tickets func(Answer) ([]delivery.Receipt, bool)) delivery.Result {
	req, err := JSONRequest(ctx, http.MethodGet, target, nil, authorization)
	if err != nil {
		return delivery.Result{Outcome: delivery.Unavailable, Code: CodeBadRequest}
	}
	a, err := c.Send(ctx, req)
	if err != nil {
		return FailureResult(err, false)
	}
	return LookupResult(a, tickets)
}

// LookupResult applies the shared rules to the answer to a lookup: a 200
// whose tickets parse reads Found (one), Absent (none) or Inconsistent
// (several: the helpdesk's ids in the reason, for a person, never a
// guess at which one is the ticket); anything else is Unavailable, with
// Auth for 401 and 403.
func LookupResult(a Answer, tickets func(Answer) ([]delivery.Receipt, bool)) delivery.Result {
	r := delivery.Result{Outcome: delivery.Unavailable, Status: a.Status, Code: StatusCode(a.Status),
		RetryAfter: RetryAfter(a.Header.Get("Retry-After"), time.Now())}
	switch {
	case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
		r.Auth = true
		return r
	case a.Status != http.StatusOK:
		return r
	case a.BodyCode != "":
		r.Code = a.BodyCode
		return r
	}
	found, ok := tickets(a)
	if !ok {
		r.Code = CodeBadAnswer
		return r
	}
	if len(found) == 0 {
		r.Outcome, r.Code = delivery.Absent, CodeAbsent
		return r
	}
	ids := make([]string, len(found))
	for i, f := range found {
		rc, ok := CleanReceipt(f, a.Host)
		if !ok {
			r.Code = CodeBadAnswer
			return r
		}
		found[i], ids[i] = rc, rc.ID
	}
	if len(found) > 1 {
		r.Outcome, r.Code = delivery.Inconsistent, CodeFoundSeveral
		r.Reason = SeveralReason(ids)
		return r
	}
	r.Outcome, r.Receipt, r.Code = delivery.Found, found[0], CodeFound
	return r
}

// SeveralReason is the reason of a lookup that found the helpdesk's
// tickets ids carrying one ticket's id as their external id: one of them
// is the ticket, the others duplicates, and a person decides which
// (delivery settle). It lists as many ids as delivery.MaxReason holds and
// says how many more.
func SeveralReason(ids []string) string {
	const head, tail = "helpdesk tickets ", " carry this ticket's id as their external id: one is the ticket, the others duplicates"
	s := head + strings.Join(ids, ", ")
	for n := len(ids) - 1; len(s)+len(tail) > delivery.MaxReason && n > 0; n-- {
		s = head + strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
	}
	return s + tail
}

// CleanReceipt checks a receipt read from a destination at host (the
// host the request went to) before it is stored or shown to the model:
// the id must be 1 to MaxIDBytes of IDCharacters, else the receipt is
// refused; a URL that is not an absolute http or https URL of at most
// MaxURLBytes of visible ASCII on host (any port) is dropped, and so is
// every URL when host is empty.
func CleanReceipt(rc delivery.Receipt, host string) (delivery.Receipt, bool) {
	rc.ID = strings.TrimSpace(rc.ID)
	if rc.ID == "" || len(rc.ID) > MaxIDBytes || strings.Trim(rc.ID, IDCharacters) != "" {
		return delivery.Receipt{}, false
	}
	if rc.URL != "" {
		u, err := url.Parse(rc.URL)
		if host == "" || len(rc.URL) > MaxURLBytes || !visibleASCII(rc.URL) || err != nil ||
			(u.Scheme != "https" && u.Scheme != "http") || u.User != nil || !strings.EqualFold(u.Hostname(), host) {
			rc.URL = ""
		}
	}
	return rc, true
}

// visibleASCII reports whether s is only visible ASCII characters (no
// space, no control character).
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// RetryAfter reads a Retry-After header value, delay-seconds or an
// HTTP-date, as a wait from now: zero when absent, malformed or past, at
// most MaxRetryAfter.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter // digits only, too many of them
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(now), 0), MaxRetryAfter)
}

// Reason is a destination's answer body as a refusal reason: valid UTF-8,
// control characters and runs of white space turned into one space, clipped
// to delivery.MaxReason bytes on a character boundary.
func Reason(body []byte) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(string(body), "\uFFFD") {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		n := utf8.RuneLen(r)
		if space {
			n++
		}
		if b.Len()+n > delivery.MaxReason {
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
