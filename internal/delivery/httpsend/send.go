package httpsend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits of one exchange with a destination.
const (
	// DefaultTimeout bounds one request, answer included, when New is
	// given none.
	DefaultTimeout = 10 * time.Second
	// ConnectTimeout bounds establishing a TCP connection.
	ConnectTimeout = 5 * time.Second
	// TLSHandshakeTimeout bounds the TLS handshake.
	TLSHandshakeTimeout = 5 * time.Second
	// IdleConnTimeout is how long a kept-alive connection may stay unused.
	IdleConnTimeout = 90 * time.Second
	// MaxIdleConns bounds the kept-alive connections to one destination.
	MaxIdleConns = 8
	// MaxAnswerBytes bounds how much of an answer's body is read.
	MaxAnswerBytes = 64 << 10
	// MaxHeaderBytes bounds an answer's header block.
	MaxHeaderBytes = 64 << 10
)

// Answer is a destination's response, its body read up to MaxAnswerBytes.
type Answer struct {
	Status int
	Header http.Header
	// Body holds at most MaxAnswerBytes.
	Body []byte
	// BodyCode is "" when the whole body was read, else why it was not:
	// CodeAnswerTooLarge, or the code of the failure that cut it short.
	BodyCode string
	// Host is the host the request was sent to (the destination's, from
	// configuration): a receipt's URL must be on it (CleanReceipt).
	Host string
}

// TransportError is a request that got no answer. Its Error is its Code, so that
// printing it never quotes the request's URL.
type TransportError struct {
	// MaybeSent is true when the whole request was written before the
	// failure: the destination may have acted on it.
	MaybeSent bool
	// Code says what failed, from this package's vocabulary.
	Code string
	err  error
}

func (f *TransportError) Error() string { return f.Code }

// Unwrap returns the transport's error, for errors.Is and errors.As. Its
// text may name the URL: never log it.
func (f *TransportError) Unwrap() error { return f.err }

// Client sends requests to one destination. It is safe for concurrent use.
type Client struct {
	hc      *http.Client
	tr      *http.Transport
	timeout time.Duration
}

// New returns a Client whose requests each take at most timeout
// (DefaultTimeout when timeout <= 0). reuse keeps connections alive between
// requests; pass true only for a destination that deduplicates by
// Idempotency-Key, because Go's transport may send such a request a second
// time on a kept-alive connection that failed after the request was
// written.
func New(timeout time.Duration, reuse bool) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		// No proxy: "no connection was made" must mean the destination
		// itself was not reached.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    TLSHandshakeTimeout,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		DisableKeepAlives:      !reuse,
		MaxIdleConns:           MaxIdleConns,
		MaxIdleConnsPerHost:    MaxIdleConns,
		IdleConnTimeout:        IdleConnTimeout,
		// HTTP/1.1 only (a non-nil, empty map turns HTTP/2 off).
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &Client{
		tr:      tr,
		timeout: timeout,
		hc: &http.Client{
			Transport: tr,
			// A redirect is the destination's answer, classified like any
			// other: following one could turn a POST into a GET or carry
			// credentials elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Timeout is the bound of one request.
func (c *Client) Timeout() time.Duration { return c.timeout }

// CloseIdleConnections closes kept-alive connections that are not in use.
func (c *Client) CloseIdleConnections() { c.tr.CloseIdleConnections() }

// Send sends req within the Client's timeout (and ctx) and reads the answer.
// The error, when there is no answer, is a *TransportError.
func (c *Client) Send(ctx context.Context, req *http.Request) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var p progress
	// The URL is the destination's, from configuration only (ParseURL),
	// never from a request.
	resp, err := c.hc.Do(req.WithContext(httptrace.WithClientTrace(ctx, p.trace()))) //nolint:gosec // G704: see above
	if err != nil {
		return Answer{}, p.failure(err)
	}
	defer func() { _ = resp.Body.Close() }()
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Host: req.URL.Hostname()}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	switch {
	case err != nil:
		a.BodyCode = transferCode(err)
	case len(body) > MaxAnswerBytes:
		body, a.BodyCode = body[:MaxAnswerBytes], CodeAnswerTooLarge
	}
	a.Body = body
	return a, nil
}

// progress records, from the transport's trace, how far a request got. The
// transport calls the trace from its own goroutines.
type progress struct {
	conn  atomic.Bool // a connection was obtained (dialled, TLS done, or reused)
	wrote atomic.Bool // a whole request was written to a connection
}

func (p *progress) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { p.conn.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				p.wrote.Store(true)
			}
		},
	}
}

// failure classifies a request that got no answer. The transport waits for
// its write to finish before it reports a failed exchange, so the trace is
// complete here.
func (p *progress) failure(err error) *TransportError {
	switch {
	case p.wrote.Load():
		// The destination may have received the request, and acted on it.
		return &TransportError{MaybeSent: true, Code: transferCode(err), err: err}
	case p.conn.Load():
		// A connection, but no complete request on it: a destination
		// cannot act on a request it did not wholly receive.
		return &TransportError{Code: CodeNotSent, err: err}
	default:
		return &TransportError{Code: connectCode(err), err: err}
	}
}

// connectCode names why no connection was made.
func connectCode(err error) string {
	var dnsErr *net.DNSError
	var recordErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var verifyErr *tls.CertificateVerificationError
	var authorityErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return CodeConnectionRefused
	case errors.As(err, &dnsErr):
		return CodeDNS
	case errors.As(err, &recordErr), errors.As(err, &alertErr), errors.As(err, &verifyErr),
		errors.As(err, &authorityErr), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return CodeTLS
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case isTimeout(err):
		return CodeConnectTimeout
	}
	return CodeConnectFailed
}

// transferCode names why an exchange stopped after the request was written.
func transferCode(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case isTimeout(err):
		return CodeTimeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return CodeReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return CodeConnectionClosed
	}
	return CodeAnswerLost
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
