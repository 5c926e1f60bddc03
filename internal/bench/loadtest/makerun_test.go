package loadtest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// runSettings are the settings make run must not inherit from the test's
// environment.
var runSettings = []string{"TABLE_NAME", "DYNAMODB_ENDPOINT", "HOOK_KEY", "HOOK_KEY_PREVIOUS", "HOOK_KEY_SECRET_ARN", "PUBLIC_URL",
	"ADDR", "DB_ADDR", "HELPDESK_ADDR", "HELPDESK_CONTROL_ADDR", "RT_ADDR", "MAKEFLAGS", "MFLAGS"}

// TestMakeRunTakesTheAddresses: `make run ADDR=… DB_ADDR=… HELPDESK_ADDR=…`
// (and RT_ADDR= with DESTINATION=rt), as the README documents them, serve
// the callback, the local store, the local helpdesk and the local Request
// Tracker on the addresses given, through the Makefile itself. The port
// after HELPDESK_ADDR's is held busy meanwhile: the helpdesk's control API
// takes an address of its own, never a port nobody checked.
func TestMakeRunTakesTheAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make run")
	}
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		return ln.Addr().String()
	}
	// serve runs make run on addresses from pick until it serves. The
	// addresses are free when picked, then let go for make run to take: when
	// another process took one meanwhile, make run says so, and new ones
	// are picked (three tries).
	serve := func(t *testing.T, pick func() []string) (map[string]string, []string) {
		for try := 1; ; try++ {
			vars := pick()
			logs, err := makeRun(t, root, vars...)
			if err == nil {
				return logs, vars
			}
			if try == 3 || !tookOneOf(err, vars) {
				t.Fatal(err)
			}
		}
	}
	t.Run("webhook", func(t *testing.T) {
		var addr, db, hd, next string
		logs, _ := serve(t, func() []string {
			addr, db, hd = free(), free(), free()
			next = holdNext(t, hd)
			return []string{"ADDR=" + addr, "DB_ADDR=" + db, "HELPDESK_ADDR=" + hd, "DESTINATION=webhook"}
		})
		want := map[string]string{"serving": "http://" + addr + "/callback", "store": "http://" + db, "helpdesk": "http://" + hd}
		for k, v := range want {
			if logs[k] != v {
				t.Errorf("make run with ADDR=%s DB_ADDR=%s HELPDESK_ADDR=%s: the %s is at %q, want %q", addr, db, hd, k, logs[k], v)
			}
		}
		if c := logs["control"]; c == "" || strings.HasPrefix(c, "http://"+next+"/") || strings.HasPrefix(c, "http://"+hd+"/") {
			t.Errorf("make run with HELPDESK_ADDR=%s (%s busy): the control API is at %q, want an address of its own", hd, next, c)
		}
		// The store's line names the pinned dynoxide both ways, the crate
		// and what its binary's --version prints, so neither looks like a
		// mismatch.
		for _, v := range []string{"dynoxide-rs " + localdb.Version, localdb.ReportedVersion} {
			if !strings.Contains(logs["pinned"], v) {
				t.Errorf("make run's store line says pinned %q, which does not name %q", logs["pinned"], v)
			}
		}
	})
	t.Run("rt", func(t *testing.T) {
		rtlocal.Require(t)
		var addr, rtAt string
		logs, _ := serve(t, func() []string {
			addr, rtAt = free(), free()
			return []string{"ADDR=" + addr, "DB_ADDR=" + free(), "RT_ADDR=" + rtAt, "DESTINATION=rt"}
		})
		if logs["rt"] != "http://"+rtAt || logs["serving"] != "http://"+addr+"/callback" {
			t.Errorf("make run DESTINATION=rt RT_ADDR=%s ADDR=%s: Request Tracker at %q, callback at %q", rtAt, addr, logs["rt"], logs["serving"])
		}
	})
}

// holdNext keeps the port after addr's busy until the test ends, and
// returns that address: busy too when another process holds it already.
func holdNext(t *testing.T, addr string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	next := net.JoinHostPort(host, strconv.Itoa(n+1))
	if ln, err := net.Listen("tcp", next); err == nil {
		t.Cleanup(func() { _ = ln.Close() })
	}
	return next
}

// tookOneOf reports whether err is make run saying that one of the
// addresses in vars (NAME=host:port) was in use.
func tookOneOf(err error, vars []string) bool {
	for _, v := range vars {
		if _, a, ok := strings.Cut(v, "="); ok && strings.Contains(err.Error(), "cannot listen on "+a+": the address is already in use") {
			return true
		}
	}
	return false
}

// makeRun runs make run with vars in root until it serves, stops it, and
// returns where it said it serves: "serving" (the callback), "store",
// "helpdesk", "control" (its control API alone) and "rt"; or, when make run
// stopped before serving, an error with its output.
func makeRun(t *testing.T, root string, vars ...string) (map[string]string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "run"}, vars...)...)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(runSettings, name) && !strings.HasPrefix(name, "DESTINATION") && !strings.HasPrefix(name, "DELIVERY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	found := map[string]string{}
	var text strings.Builder
	served := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			text.WriteString(sc.Text() + "\n")
			var e struct {
				Msg, Endpoint, Callback, URL, Pinned string
				Control                              string `json:"control_during_refuse"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			switch {
			case strings.HasPrefix(e.Msg, "local store (dynoxide"):
				found["store"], found["pinned"] = e.Endpoint, e.Pinned
			case e.Msg == "local helpdesk":
				found["helpdesk"], found["control"] = strings.TrimSuffix(e.URL, "/"), e.Control
			case e.Msg == "local Request Tracker":
				found["rt"] = e.URL
			case e.Msg == "serving" && found["serving"] == "":
				found["serving"] = e.Callback
				close(served)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = cmd.Wait()
	}
	select {
	case <-served:
		stop()
	case <-done:
		_ = cmd.Wait()
		return nil, fmt.Errorf("make run %v stopped before serving:\n%s", vars, text.String())
	case <-time.After(5 * time.Minute):
		stop()
		t.Fatalf("make run %v did not serve within 5 minutes:\n%s", vars, text.String())
	}
	return found, nil
}

// TestDynoxidePath: `make -s dynoxide-path`, which docs/development.md runs
// to start a second store, prints the dynoxide make uses: one that reports
// the pinned version, whether it came from PATH or from make dynoxide
// (.tools), and the .tools one when PATH has none.
func TestDynoxidePath(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	if dev := readRoot(t, root, "docs/development.md"); !strings.Contains(dev, `"$(make -s dynoxide-path)" serve`) {
		t.Error("docs/development.md does not start its second store with make -s dynoxide-path")
	}
	path := func(env []string) string {
		cmd := exec.Command("make", "-s", "--no-print-directory", "dynoxide-path")
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -s dynoxide-path: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	// As make test runs it: the binary the tests use.
	p := path(os.Environ())
	if out, err := exec.Command(p, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != localdb.ReportedVersion {
		t.Errorf("make -s dynoxide-path = %s, which reports %q (%v), want %q", p, out, err, localdb.ReportedVersion)
	}
	// With no dynoxide on PATH: the one make dynoxide builds.
	if got, want := path([]string{"PATH=" + onlyTools(t), "HOME=" + t.TempDir()}), filepath.Join(root, ".tools/dynoxide/bin/dynoxide"); got != want {
		t.Errorf("make -s dynoxide-path without a dynoxide on PATH = %s, want %s", got, want)
	}
}

// onlyTools returns a folder for PATH that holds make and the few commands
// the Makefile runs before any recipe, and nothing else: no dynoxide, no
// cargo.
func onlyTools(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"sh", "make", "echo", "grep", "sha256sum", "cut", "id"} {
		lp, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(lp, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}
