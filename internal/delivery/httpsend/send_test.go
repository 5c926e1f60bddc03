package httpsend_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/httpsend"
)

// TestMain fails the package when a goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rawServer accepts connections on loopback and hands each to serve, which
// reads and writes raw bytes: the faults a real HTTP server will not make.
func rawServer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// readRequest reads one whole request from c.
func readRequest(c net.Conn) error {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

func post(t *testing.T, target string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "key-1")
	return req
}

func send(t *testing.T, c *httpsend.Client, req *http.Request) (httpsend.Answer, *httpsend.TransportError) {
	t.Helper()
	a, err := c.Send(context.Background(), req)
	if err == nil {
		return a, nil
	}
	var f *httpsend.TransportError
	if !errors.As(err, &f) {
		t.Fatalf("Send error %T is not a *TransportError", err)
	}
	return a, f
}

// boundNotListening returns a loopback address whose port this test holds
// bound but never listens on, so a connection to it is refused for the
// whole test: no other process can take the port in the meantime, as it
// could one picked and given back.
func boundNotListening(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

func TestSendFailures(t *testing.T) {
	refused := "http://" + boundNotListening(t)

	resetAfterRead := rawServer(t, func(c net.Conn) {
		_ = readRequest(c)
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	})
	closeAfterRead := rawServer(t, func(c net.Conn) {
		_ = readRequest(c)
		_ = c.Close()
	})
	hangAfterRead := rawServer(t, func(c net.Conn) {
		_ = readRequest(c)
		go func() { // hold the connection until the client gives up
			_, _ = io.Copy(io.Discard, c)
			_ = c.Close()
		}()
	})
	resetEarly := rawServer(t, func(c net.Conn) {
		_, _ = c.Read(make([]byte, 1024)) // the connection is made, the request has begun
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	})
	halfAnswer := rawServer(t, func(c net.Conn) {
		_ = readRequest(c)
		_, _ = io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{\"id\":")
		_ = c.Close()
	})
	tlsServer := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a request reached the TLS server")
	}))
	tlsServer.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes
	tlsServer.StartTLS()
	defer tlsServer.Close()

	// The whole body cannot fit in the socket buffers of a connection the
	// peer resets early: the write fails, so nothing whole was sent.
	big := bytes.Repeat([]byte("x"), 64<<20)

	for _, c := range []struct {
		name      string
		target    string
		body      []byte
		maybeSent bool
		code      string
	}{
		{"connection refused", refused, nil, false, "connection_refused"},
		{"tls handshake fails", tlsServer.URL, nil, false, "tls"},
		{"dns fails", "http://oncecall-test.invalid/", nil, false, "dns"},
		{"reset before the request is written", resetEarly, big, false, "not_sent"},
		{"reset after the request was read", resetAfterRead, nil, true, "reset"},
		{"closed after the request was read", closeAfterRead, nil, true, "connection_closed"},
		{"no answer in time", hangAfterRead, nil, true, "timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			timeout := 5 * time.Second // a TLS handshake under the race detector is slow
			if c.code == "timeout" {
				timeout = 300 * time.Millisecond
			}
			cl := httpsend.New(timeout, false)
			defer cl.CloseIdleConnections()
			_, f := send(t, cl, post(t, c.target, c.body))
			if f == nil {
				t.Fatal("Send succeeded")
			}
			if f.MaybeSent != c.maybeSent || f.Code != c.code {
				t.Fatalf("TransportError = {MaybeSent %v, Code %q} (%v), want {%v, %q}", f.MaybeSent, f.Code, f.Unwrap(), c.maybeSent, c.code)
			}
			if f.Error() != c.code {
				t.Errorf("Error() = %q: it must be the code alone", f.Error())
			}
			create, lookup := httpsend.FailureResult(f, true), httpsend.FailureResult(f, false)
			want := delivery.Unavailable
			if c.maybeSent {
				want = delivery.Ambiguous
			}
			if create.Outcome != want || lookup.Outcome != delivery.Unavailable || create.Code != c.code {
				t.Errorf("FailureResult: create %+v, lookup %+v", create, lookup)
			}
		})
	}

	t.Run("answer cut short", func(t *testing.T) {
		cl := httpsend.New(time.Second, false)
		a, f := send(t, cl, post(t, halfAnswer, nil))
		if f != nil || a.Status != 201 || a.BodyCode != "connection_closed" {
			t.Fatalf("Send = %+v, %v", a, f)
		}
		r := httpsend.CreateResult(a, false, func(httpsend.Answer) (delivery.Receipt, bool) { return delivery.Receipt{ID: "1"}, true })
		if r.Outcome != delivery.Ambiguous || r.Code != "connection_closed" {
			t.Fatalf("CreateResult = %+v", r)
		}
	})
}

func TestSendBoundsTheAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(bytes.Repeat([]byte("a"), httpsend.MaxAnswerBytes+10))
	}))
	defer srv.Close()
	cl := httpsend.New(time.Second, true)
	defer cl.CloseIdleConnections()
	a, f := send(t, cl, post(t, srv.URL, nil))
	if f != nil || len(a.Body) != httpsend.MaxAnswerBytes || a.BodyCode != httpsend.CodeAnswerTooLarge {
		t.Fatalf("Send = %d bytes, %q, %v", len(a.Body), a.BodyCode, f)
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer target.Close()
	srv := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer srv.Close()
	cl := httpsend.New(time.Second, false)
	a, f := send(t, cl, post(t, srv.URL, []byte("{}")))
	if f != nil || a.Status != http.StatusFound || elsewhere.Load() != 0 {
		t.Fatalf("Send = %d, %v; requests elsewhere %d", a.Status, f, elsewhere.Load())
	}
}

// TestNoResendWithoutReuse shows why a destination that does not
// deduplicate gets a Client without kept-alive connections: on a reused
// connection that the server closes after reading the request, Go's
// transport sends a request carrying Idempotency-Key a second time by
// itself. The server below answers its first request, then closes every
// later connection (or the same one) after reading one request.
func TestNoResendWithoutReuse(t *testing.T) {
	for _, reuse := range []bool{true, false} {
		var requests atomic.Int32
		srv := rawServer(t, func(c net.Conn) {
			go func() {
				defer func() { _ = c.Close() }()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if requests.Add(1) > 1 {
						return // read, then close without an answer
					}
					_, _ = io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\n1")
				}
			}()
		})
		cl := httpsend.New(time.Second, reuse)
		if _, f := send(t, cl, post(t, srv, []byte("{}"))); f != nil {
			t.Fatal(f)
		}
		_, f := send(t, cl, post(t, srv, []byte("{}")))
		cl.CloseIdleConnections()
		if f == nil || !f.MaybeSent {
			t.Fatalf("reuse %v: second Send = %v, want a failure after sending", reuse, f)
		}
		want := int32(2)
		if reuse {
			want = 3 // the transport sent the second request again
		}
		if got := requests.Load(); got != want {
			t.Errorf("reuse %v: the server read %d requests, want %d", reuse, got, want)
		}
	}
}

func TestSendHonoursTheCallersContext(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	cl := httpsend.New(10*time.Second, false)
	_, err := cl.Send(ctx, post(t, srv.URL, nil))
	var f *httpsend.TransportError
	if !errors.As(err, &f) || !f.MaybeSent || f.Code != "canceled" {
		t.Fatalf("Send = %v", err)
	}
	if !strings.Contains(cl.Timeout().String(), "10s") {
		t.Errorf("Timeout = %v", cl.Timeout())
	}
}
