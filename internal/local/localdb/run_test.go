package localdb

import (
	"net"
	"strings"
	"testing"
)

// TestAPortTakenByAnotherServerIsNoStore: given a port that another server
// took after it was picked, run reports that dynoxide could not listen,
// rather than a store that is the other server.
func TestAPortTakenByAnotherServerIsNoStore(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Skip(err)
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close() }()
	go func() { // the other server accepts, as a server does
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(other.Addr().String())
	s, err := run(bin, "127.0.0.1", port)
	if err == nil {
		_ = s.Close()
		t.Fatalf("run on %s, which another server holds, reported a store at %s", other.Addr(), s.URL)
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("run on a port another server holds: %v; want dynoxide's word that it is in use", err)
	}
}
