package main

import (
	"net"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/config"
)

// occupied returns an address something already listens on, as an earlier
// make run would.
func occupied(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// TestAddressInUse: a second make run is told which address is taken,
// that an earlier server may hold it, and which flag moves this one.
func TestAddressInUse(t *testing.T) {
	addr := occupied(t)
	d := config.Delivery{Destination: config.DestinationWebhook}
	_, err := localHelpdesk(addr, &d)
	if err == nil {
		t.Fatal("the local helpdesk started on an address in use")
	}
	for _, want := range []string{"the local helpdesk cannot listen on " + addr, "already in use", "earlier server (make run) still running", "-helpdesk-addr HOST:PORT", "DESTINATION_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the helpdesk's error %q does not say %q", err, want)
		}
	}
	if _, err := localStore(addr); err == nil || !strings.Contains(err.Error(), "the local store cannot listen on "+addr) ||
		!strings.Contains(err.Error(), "make run") || !strings.Contains(err.Error(), "-db-addr") {
		t.Errorf("the store's error: %v", err)
	}
	if err := startError("the callback", addr, "-addr", "", listenErr(t, addr)); !strings.Contains(err.Error(), "the callback cannot listen on "+addr) ||
		!strings.Contains(err.Error(), "make run") || !strings.Contains(err.Error(), "-addr HOST:PORT") {
		t.Errorf("the callback's error: %v", err)
	}
	// Any other failure is reported as it is.
	if err := startError("the callback", "nowhere:99999", "-addr", "", listenErr(t, "nowhere:99999")); strings.Contains(err.Error(), "make run") {
		t.Errorf("another failure blamed on an earlier make run: %v", err)
	}
}

func listenErr(t *testing.T, addr string) error {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		_ = ln.Close()
		t.Fatalf("listened on %s", addr)
	}
	return err
}
