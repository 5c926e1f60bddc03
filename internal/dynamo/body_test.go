package dynamo_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/oncecall/oncecall/internal/dynamo"
)

// raceRig stages, step by step, the race between the SDK closing a request
// body and net/http's writer still reading it:
//
//  1. the client's second write on a connection (the body, when the headers
//     were flushed on their own) returns only once the SDK has the response
//     headers and has closed its body (released);
//  2. the server answers with half of its body, then waits until the
//     client's writer has finished the request (and, if that failed, until
//     the connection is closed) before it sends the rest.
//
// A client that survives the rig reads the whole answer and keeps its
// connection.
type raceRig struct {
	srv      *httptest.Server
	hc       *http.Client
	released chan struct{}
	wrote    chan error
	closed   chan struct{}
	reused   chan bool

	releaseOnce, closeOnce sync.Once
}

const gateTimeout = 5 * time.Second

func newRaceRig(t *testing.T) *raceRig {
	r := &raceRig{
		released: make(chan struct{}),
		wrote:    make(chan error, 4),
		closed:   make(chan struct{}),
		reused:   make(chan bool, 4),
	}
	const head, tail = `{"Item":{"pk":{"S":"`, `ticket#1"}}}`
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(tail)))
		_, _ = io.WriteString(w, head)
		w.(http.Flusher).Flush()
		select {
		case err := <-r.wrote:
			if err != nil {
				select {
				case <-r.closed:
				case <-time.After(gateTimeout):
				}
			}
		case <-time.After(gateTimeout):
		}
		_, _ = io.WriteString(w, tail)
	}))
	t.Cleanup(r.srv.Close)
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, rig: r}, nil
	}}
	r.hc = &http.Client{Transport: tr}
	t.Cleanup(r.hc.CloseIdleConnections)
	return r
}

// gatedConn holds its second write until the rig is released and tells the
// rig once it is closed.
type gatedConn struct {
	net.Conn
	rig    *raceRig
	writes int
}

func (c *gatedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.writes++; c.writes == 2 {
		select {
		case <-c.rig.released:
		case <-time.After(gateTimeout):
		}
	}
	return n, err
}

func (c *gatedConn) Close() error {
	err := c.Conn.Close()
	c.rig.closeOnce.Do(func() { close(c.rig.closed) })
	return err
}

// client returns an SDK client through the rig; extra options come after
// dynamo.Options.
func (r *raceRig) client(extra ...func(*dynamodb.Options)) *dynamodb.Client {
	cfg := dynamo.LocalConfig("us-east-1")
	cfg.HTTPClient = r.hc
	release := middleware.DeserializeMiddlewareFunc("release", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		// Innermost: the SDK's HTTP handler has returned, so it has
		// closed the request body, and the response body is unread.
		out, md, err := next.HandleDeserialize(ctx, in)
		r.releaseOnce.Do(func() { close(r.released) })
		return out, md, err
	})
	opts := append([]func(*dynamodb.Options){dynamo.Options(r.srv.URL), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Deserialize.Add(release, middleware.After)
		})
	}}, extra...)
	return dynamodb.NewFromConfig(cfg, opts...)
}

func (r *raceRig) getItem(c *dynamodb.Client) (*dynamodb.GetItemOutput, error) {
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:      func(i httptrace.GotConnInfo) { r.reused <- i.Reused },
		WroteRequest: func(i httptrace.WroteRequestInfo) { r.wrote <- i.Err },
	})
	return c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String("oncecall"),
		Key:       map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "ticket#1"}},
	})
}

// TestAnswerOutlivesTheSDKClosingTheRequestBody stages the race in which
// the SDK closes a request body that net/http is still reading, after the
// server has answered: the client built with Options reads the whole
// answer and keeps its connection for the next call.
func TestAnswerOutlivesTheSDKClosingTheRequestBody(t *testing.T) {
	r := newRaceRig(t)
	c := r.client()
	out, err := r.getItem(c)
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if v, ok := out.Item[dynamo.PartitionKey].(*types.AttributeValueMemberS); !ok || v.Value != "ticket#1" {
		t.Fatalf("item %v, want pk ticket#1", out.Item)
	}
	if _, err := r.getItem(c); err != nil {
		t.Fatalf("second GetItem: %v", err)
	}
	if first, second := <-r.reused, <-r.reused; first || !second {
		t.Fatalf("connection reused: first %v, second %v; want a new one, then the same one again", first, second)
	}
	select {
	case <-r.closed:
		t.Fatal("the client closed its connection")
	default:
	}
}

// TestBareSDKRaceObservation runs the rig above without the body copy that
// Options installs and reports, without failing, whether the upstream race
// (https://github.com/aws/aws-sdk-go-v2/issues/1825 and /2737: the SDK's early close makes
// net/http tear the connection down under the answer) is still there. The
// guarantee is TestAnswerOutlivesTheSDKClosingTheRequestBody; this is the
// line that says when ownBody has become unnecessary. It fails only when
// the bare client gets an answer that is not the rig's.
func TestBareSDKRaceObservation(t *testing.T) {
	r := newRaceRig(t)
	c := r.client(func(o *dynamodb.Options) { o.HTTPClient = r.hc })
	out, err := r.getItem(c)
	switch {
	case errors.Is(err, net.ErrClosed):
		t.Log("upstream race observed: the bare SDK lost the answer (net.ErrClosed); ownBody (body.go) is still needed")
	case err != nil:
		t.Logf("upstream race observed in another form: the bare SDK lost the answer (%v); ownBody (body.go) is still needed", err)
	default:
		if v, ok := out.Item[dynamo.PartitionKey].(*types.AttributeValueMemberS); !ok || v.Value != "ticket#1" {
			t.Fatalf("the bare SDK read item %v, want pk ticket#1: the rig is broken", out.Item)
		}
		t.Log("upstream race NOT observed: the bare SDK read the whole answer; if this holds on every run, the SDK or net/http no longer races and ownBody (body.go) can be removed")
	}
}

// TestOptionsKeepCloseIdleConnections checks that the wrapped client still
// lets its owner close idle connections, as tools and tests do on exit.
func TestOptionsKeepCloseIdleConnections(t *testing.T) {
	r := newRaceRig(t)
	c := r.client()
	if _, err := r.getItem(c); err != nil {
		t.Fatal(err)
	}
	ci, ok := c.Options().HTTPClient.(interface{ CloseIdleConnections() })
	if !ok {
		t.Fatalf("%T has no CloseIdleConnections", c.Options().HTTPClient)
	}
	ci.CloseIdleConnections()
	select {
	case <-r.closed:
	case <-time.After(gateTimeout):
		t.Fatal("the idle connection was not closed")
	}
}
