package main

import (
	"flag"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/testing/doctest"
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

// TestStoreClash: with DYNAMODB_ENDPOINT set and -db-addr given (make run
// DB_ADDR=…), the start says that the endpoint won, as it does for the
// admin tool, and how to have the local store instead; with one of them
// alone it says nothing.
func TestStoreClash(t *testing.T) {
	for _, c := range []struct {
		args     []string
		endpoint string
		clash    bool
	}{
		{[]string{"-db-addr", "127.0.0.1:8100"}, "http://127.0.0.1:8000", true},
		{nil, "http://127.0.0.1:8000", false},
		{[]string{"-db-addr", "127.0.0.1:8100"}, "", false},
	} {
		fs := flag.NewFlagSet("oncecall", flag.ContinueOnError)
		addFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		note := storeClash(fs, c.endpoint)
		if !c.clash {
			if note != "" {
				t.Errorf("%v with DYNAMODB_ENDPOINT=%q: %q", c.args, c.endpoint, note)
			}
			continue
		}
		for _, want := range []string{"DYNAMODB_ENDPOINT=http://127.0.0.1:8000 is set, and wins", "-db-addr 127.0.0.1:8100 (DB_ADDR) is not used", "unset DYNAMODB_ENDPOINT"} {
			if !strings.Contains(note, want) {
				t.Errorf("the clash note %q does not say %q", note, want)
			}
		}
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

// TestMakeRunVariables: docs/configuration.md's table of make run's
// variables has one row per variable the Makefile passes as a flag, with
// that flag and the flag's default (none: an empty one).
func TestMakeRunVariables(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	section, ok := doctest.Section(string(page), "## make run's variables")
	if !ok {
		t.Fatal("docs/configuration.md has no make run's variables section")
	}
	rows := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| `(-[a-z-]+)` \\| (?:`([^`]*)`|none) \\|").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = m[2:]
	}
	fs := flag.NewFlagSet("oncecall", flag.ContinueOnError)
	addFlags(fs)
	passed := regexp.MustCompile(`\$\(if \$\(([A-Z_]+)\),(-[a-z-]+) \$\(([A-Z_]+)\)\)`).FindAllStringSubmatch(string(makefile), -1)
	if len(passed) < 4 {
		t.Fatalf("the Makefile passes %d variables to make run", len(passed))
	}
	for _, p := range passed {
		f := fs.Lookup(strings.TrimPrefix(p[2], "-"))
		row, ok := rows[p[1]]
		switch {
		case f == nil:
			t.Errorf("the Makefile passes %s as %s, which cmd/oncecall does not declare", p[1], p[2])
		case !ok:
			t.Errorf("docs/configuration.md's table leaves out %s", p[1])
		case row[0] != p[2] || row[1] != f.DefValue:
			t.Errorf("docs/configuration.md: %s is %s, default %s; the Makefile passes %s, whose default is %s", p[1], row[0], row[1], p[2], f.DefValue)
		}
		delete(rows, p[1])
	}
	for v := range rows {
		t.Errorf("docs/configuration.md's table names %s, which make run does not pass", v)
	}
}
