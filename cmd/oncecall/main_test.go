package main

import (
	"flag"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"
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
