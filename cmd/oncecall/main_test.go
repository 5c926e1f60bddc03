package main

import (
	"flag"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// TestServesLoopbackOnly: without -addr the server listens on loopback
// only; an address it binds beyond that is told apart, so that it warns
// of what that exposes, as the flag's help says.
func TestServesLoopbackOnly(t *testing.T) {
	if h, _, err := net.SplitHostPort(DefaultAddr); err != nil || !net.ParseIP(h).IsLoopback() {
		t.Fatalf("DefaultAddr %s is not a loopback address", DefaultAddr)
	}
	for addr, want := range map[string]bool{"127.0.0.1:3210": true, "[::1]:3210": true, "0.0.0.0:3210": false, "192.0.2.7:3210": false, "[::]:3210": false} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := loopback(a); got != want {
			t.Errorf("loopback(%s) = %v, want %v", addr, got, want)
		}
	}
	fs := flag.NewFlagSet("oncecall", flag.ContinueOnError)
	addFlags(fs)
	if f := fs.Lookup("addr"); f == nil || f.DefValue != DefaultAddr || !strings.Contains(f.Usage, "loopback only by default") || !strings.Contains(f.Usage, "exposes") {
		t.Errorf("-addr: %+v", f)
	}
}

// TestMain fails the package when a goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTheHelpdeskControlAPIHasAnAddressOfItsOwn: the local helpdesk moved
// to HOST:PORT (HELPDESK_ADDR) starts while PORT+1 is busy, its control API
// on a free port it names; the default helpdesk address keeps the
// documented control address.
func TestTheHelpdeskControlAPIHasAnAddressOfItsOwn(t *testing.T) {
	if got := helpdesk.ControlAddrFor(helpdesk.DefaultAddr); got != helpdesk.DefaultControlAddr {
		t.Errorf("ControlAddrFor(%s) = %s, want %s", helpdesk.DefaultAddr, got, helpdesk.DefaultControlAddr)
	}
	for attempt := 1; ; attempt++ {
		// A port for the helpdesk, the port after it held busy meanwhile.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		next, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port+1)))
		if err == nil { // else another process holds it: busy all the same
			defer func() { _ = next.Close() }()
		}
		_ = ln.Close()
		d := config.Delivery{Destination: config.DestinationWebhook}
		hd, err := localHelpdesk(addr, "", &d)
		if err != nil && strings.Contains(err.Error(), " on "+addr+":") && attempt < 3 {
			continue // another process took the port this test picked for the helpdesk: pick again
		}
		if err != nil {
			t.Fatalf("the local helpdesk on %s with the next port busy: %v", addr, err)
		}
		defer func() { _ = hd.Close() }()
		if hd.Addr() != addr || hd.ControlURL() == hd.URL() || d.URL != hd.WebhookURL() {
			t.Fatalf("helpdesk on %s, control API at %s, delivering to %s; want %s, an address of its own, the webhook", hd.Addr(), hd.ControlURL(), d.URL, addr)
		}
		resp, err := http.Get(hd.ControlURL() + helpdesk.ControlPath + "/capabilities")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the control API at %s answers %d", hd.ControlURL(), resp.StatusCode)
		}
		return
	}
}
