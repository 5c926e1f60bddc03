package localdb

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	miniserver "github.com/truora/minidyn/server"
)

// DefaultAddr is where `make run` serves the embedded store.
const DefaultAddr = "127.0.0.1:8000"

// Server is a running embedded store.
type Server struct {
	// Mini is the minidyn handler, for its failure emulation.
	Mini *miniserver.Server
	// URL is the endpoint to give the SDK (http://host:port).
	URL string

	http *http.Server
	done chan struct{}
}

// Start listens on addr (":0" for any free port) and serves a fresh, empty
// store until Close.
func Start(addr string) (*Server, error) { return StartWith(addr, nil) }

// StartWith is Start with the store's handler wrapped by front (when not
// nil), for example to count or reshape requests. Either way the store
// removes attributes named in a top-level REMOVE, as DynamoDB does and
// minidyn alone does not, and keeps secondary indexes right when an update
// gives an item an index key (see parity).
func StartWith(addr string, front func(http.Handler) http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mini := miniserver.NewServer()
	var h http.Handler = newParity(mini)
	if front != nil {
		h = front(h)
	}
	s := &Server{
		Mini: mini,
		URL:  "http://" + ln.Addr().String(),
		http: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return s, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	<-s.done
	return err
}
