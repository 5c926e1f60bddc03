package dynamo

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ownBody is an HTTP client that hands the transport a request body of its
// own, read into memory before the request is sent.
//
// The SDK closes the body it built as soon as the response headers arrive.
// net/http may still hold that body then: a request whose body is not a
// known in-memory reader has its headers flushed first and its body copied
// straight to the socket, so the server can answer before the transport's
// writer has made its final read, which finds the closed body, fails with
// io.EOF and tears the connection down while the response body is still
// being read ("use of closed network connection" on a 200 answer; see
// https://github.com/aws/aws-sdk-go-v2/issues/1825 and
// https://github.com/aws/aws-sdk-go-v2/issues/2737). For a TransactWriteItems that
// committed, that turns success into an error and a retry. A body in
// memory is written with the headers in one piece and outlives the SDK's.
type ownBody struct{ next aws.HTTPClient }

// Do sends r with a copy of its body.
func (c ownBody) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return c.next.Do(r)
	}
	var b []byte
	var err error
	if n := r.ContentLength; n > 0 {
		// The SDK always knows the length: one allocation, no growing.
		b = make([]byte, n)
		_, err = io.ReadFull(r.Body, b)
	} else {
		b, err = io.ReadAll(r.Body)
	}
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("dynamo: read request body: %w", err)
	}
	out := new(http.Request)
	*out = *r
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.ContentLength = int64(len(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return c.next.Do(out)
}

// CloseIdleConnections closes the idle connections of the wrapped client,
// when it keeps any.
func (c ownBody) CloseIdleConnections() {
	if ci, ok := c.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// withOwnBody wraps c in ownBody once. The SDK has set its HTTP client
// before it applies option functions, so c is never nil here.
func withOwnBody(c aws.HTTPClient) aws.HTTPClient {
	if _, ok := c.(ownBody); ok {
		return c
	}
	return ownBody{next: c}
}
