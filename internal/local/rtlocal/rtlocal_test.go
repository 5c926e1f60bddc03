package rtlocal_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
)

// TestFreshInstancesStopAndStart: each instance is a fresh RT with the
// queue's oncecall fields and a working token; instances share nothing; a
// stopped one refuses connections and, started again, has kept its
// tickets.
func TestFreshInstancesStopAndStart(t *testing.T) {
	rtlocal.Require(t)
	a, err := rtlocal.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	start := time.Now()
	b, err := rtlocal.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	t.Logf("a fresh RT from the prepared database answered in %v", time.Since(start).Round(10*time.Millisecond))

	id := create(t, a, "k-1")
	if n := search(t, a, "k-1"); n != 1 {
		t.Fatalf("RT a holds %d tickets with the key, want 1", n)
	}
	if n := search(t, b, "k-1"); n != 0 {
		t.Fatalf("RT b holds %d tickets of RT a", n)
	}
	a.Stop()
	if _, err := http.Get(a.URL + "/"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a stopped RT: %v", err)
	}
	if err := a.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := search(t, a, "k-1"); n != 1 || id == "" {
		t.Fatalf("after a restart RT a holds %d tickets with the key, want 1", n)
	}
}

// TestNoOneTakesItsPort: the port Start reads back is RT's from the
// start: another process that tries to take it after Start picked it and
// before RT serves cannot, and RT serves there.
func TestNoOneTakesItsPort(t *testing.T) {
	rtlocal.Require(t)
	var taken net.Listener
	defer rtlocal.SetTestHookListening(func(addr string) {
		if ln, err := net.Listen("tcp", addr); err == nil {
			taken = ln
		}
	})()
	in, err := rtlocal.Start("127.0.0.1:0")
	if taken != nil {
		defer func() { _ = taken.Close() }()
		t.Errorf("another process took RT's port %s before RT started", taken.Addr())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	if n := search(t, in, "k-1"); n != 0 {
		t.Fatalf("a fresh RT holds %d tickets with the key", n)
	}
	create(t, in, "k-1")
	if n := search(t, in, "k-1"); n != 1 {
		t.Fatalf("RT on %s holds %d tickets with the key, want 1", in.Addr, n)
	}
}

func create(t *testing.T, in *rtlocal.Instance, key string) string {
	t.Helper()
	status, raw, err := in.REST(context.Background(), http.MethodPost, rt.TicketPath,
		map[string]any{"Queue": in.Queue, "Subject": "s", "CustomFields": map[string]string{rt.KeyField: key}})
	var out map[string]any
	if err != nil || json.Unmarshal(raw, &out) != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %v %s", status, err, raw)
	}
	id, _ := out["id"].(string)
	return id
}

func search(t *testing.T, in *rtlocal.Instance, key string) int {
	t.Helper()
	found, err := rtlocal.Search(context.Background(), in.URL, in.Authorize, rt.Query(key))
	if err != nil {
		t.Fatal(err)
	}
	return len(found)
}

// TestMakefileInstallsThisVersion: make rt-install installs the version
// this package runs.
func TestMakefileInstallsThisVersion(t *testing.T) {
	p, ok := localdb.RepoFile("Makefile")
	if !ok {
		t.Fatal("no Makefile above the working directory")
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "RT_VERSION   := " + rtlocal.Version + "\n"; !strings.Contains(string(raw), want) {
		t.Fatalf("the Makefile does not say %q", want)
	}
}
