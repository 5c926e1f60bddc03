package localdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/config"
)

// DefaultAddr is where `make run` serves the store.
const DefaultAddr = config.LocalStoreAddr

// startTimeout bounds how long Start waits for the store to answer.
const startTimeout = 10 * time.Second

// Server is a running store.
type Server struct {
	// URL is the endpoint to give the SDK (http://host:port): the store
	// itself, or the front StartWith put before it.
	URL string
	// Direct is the store's own endpoint, past any front.
	Direct string

	cmd    *exec.Cmd
	exited chan struct{}
	out    *lockedBuffer
	front  *http.Server
	frontW chan struct{}
}

// Start runs a fresh, empty store listening on addr (":0" or "host:0" for
// any free port) until Close.
func Start(addr string) (*Server, error) { return StartWith(addr, nil) }

// StartWith is Start with front (when not nil) wrapping the store's
// requests: the store then listens on a port of its own and URL is a
// reverse proxy on addr that serves front(store), for example to count
// requests.
func StartWith(addr string, front func(http.Handler) http.Handler) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	storeAddr := addr
	if front != nil {
		storeAddr = "127.0.0.1:0"
	}
	s, err := spawn(bin, storeAddr)
	if err != nil {
		return nil, err
	}
	if front == nil {
		return s, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	target, _ := url.Parse(s.Direct)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	s.front = &http.Server{Handler: front(proxy), ReadHeaderTimeout: 5 * time.Second}
	s.frontW = make(chan struct{})
	s.URL = "http://" + ln.Addr().String()
	go func() {
		defer close(s.frontW)
		_ = s.front.Serve(ln)
	}()
	return s, nil
}

// maxSpawns bounds how many ports spawn tries for an address of port 0.
const maxSpawns = 5

// errAddrInUse: dynoxide exited because its port was taken.
var errAddrInUse = errors.New("localdb: dynoxide's port was taken before it listened")

// inUse is how dynoxide says, as it exits, that its port is taken.
const inUse = "already in use"

// testHookPicked, when set, is called with each address spawn picked
// for a port of 0, before dynoxide starts on it.
var testHookPicked func(addr string)

// spawn starts bin on addr; a port of 0 is replaced by a free one, and by
// another when dynoxide finds it taken by another process (dynoxide,
// told port 0, does not say which port it got).
func spawn(bin, addr string) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("localdb: address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port != "0" {
		if ln, err := net.Listen("tcp", net.JoinHostPort(host, port)); err != nil {
			return nil, err // taken: say so as net.Listen does
		} else {
			_ = ln.Close()
		}
		return run(bin, host, port)
	}
	for n := 1; ; n++ {
		p, err := freePort(host)
		if err != nil {
			return nil, err
		}
		if testHookPicked != nil {
			testHookPicked(net.JoinHostPort(host, p))
		}
		s, err := run(bin, host, p)
		if errors.Is(err, errAddrInUse) && n < maxSpawns {
			continue
		}
		return s, err
	}
}

// freePort returns a port on host that nothing listens on now (the
// kernel's pick, closed again at once): dynoxide given it may find it
// taken by another process, and must then say so and be given another.
func freePort(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// listeningLine is what dynoxide prints once it has bound its address
// (without --log quiet), followed by http://host:port.
const listeningLine = "Dynoxide listening on "

// run starts bin on host:port and waits until that dynoxide says it
// listens there. A connection is no proof: another process that took the
// port would accept it too, and this dynoxide, finding the port taken,
// would exit (spawn then tries another port).
func run(bin, host, port string) (*Server, error) {
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "serve", "--host", host, "--port", port)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("localdb: start %s: %w", bin, err)
	}
	s := &Server{URL: "http://" + net.JoinHostPort(host, port), cmd: cmd, exited: make(chan struct{}), out: out}
	s.Direct = s.URL
	go func() { _ = cmd.Wait(); close(s.exited) }()
	listening := []byte(listeningLine + s.URL)
	deadline := time.Now().Add(startTimeout)
	for !bytes.Contains(out.Bytes(), listening) {
		select {
		case <-s.exited:
			said := bytes.TrimSpace(out.Bytes())
			if bytes.Contains(said, []byte(inUse)) {
				return nil, fmt.Errorf("%w: %s", errAddrInUse, said)
			}
			return nil, fmt.Errorf("localdb: dynoxide on %s:%s exited: %s", host, port, said)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.Close()
			return nil, fmt.Errorf("localdb: dynoxide on %s:%s did not listen within %s", host, port, startTimeout)
		}
	}
	return s, nil
}

// Close stops the store (and its front) and waits for it.
func (s *Server) Close() error {
	var err error
	if s.front != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.front.Shutdown(ctx)
		cancel()
		<-s.frontW
	}
	select {
	case <-s.exited:
		return errors.Join(err, fmt.Errorf("localdb: dynoxide had exited: %s", bytes.TrimSpace(s.out.Bytes())))
	default:
	}
	_ = s.cmd.Process.Signal(interrupt)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return err
}

// maxOutput bounds how much of the child's output is kept.
const maxOutput = 64 << 10

// lockedBuffer collects the child's output for error messages, up to
// maxOutput.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > maxOutput {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
