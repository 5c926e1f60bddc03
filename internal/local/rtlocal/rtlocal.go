package rtlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// The Debian installation this package runs (`make rt-install`).
const (
	// Version is the Debian version of request-tracker5 the Makefile
	// installs (RT_VERSION); keep them in step.
	Version = "5.0.3+dfsg-3~deb12u7"
	// ServerPath is RT's own web server.
	ServerPath = "/usr/share/request-tracker5/libexec/rt-server"
	// SetupPath builds RT's database.
	SetupPath = "/usr/sbin/rt-setup-database-5"
	// LibPath is RT's Perl library.
	LibPath = "/usr/share/request-tracker5/lib"
)

// Settings of a local RT.
const (
	// DefaultAddr is where `make rt` and `make run DESTINATION=rt` serve
	// RT.
	DefaultAddr = "127.0.0.1:8030"
	// Queue is the queue tickets are created in; its ticket custom fields
	// are the adapter's (rt.Fields).
	Queue = rt.DefaultQueue
	// Workers is how many requests RT serves at once (its prefork
	// workers): about 190 MiB each.
	Workers = 2
	// RootPassword is the web password of RT's root user, for a person
	// looking at the tickets in a browser (RT's initial default).
	RootPassword = "password"
	// BcryptCost hashes RT's passwords and tokens: RT's default, 12,
	// spends about 0.3 s on every authenticated request here.
	BcryptCost = 4
	// StartTimeout bounds how long Start waits for RT to answer: 2 to 3
	// seconds on an idle machine, and over a minute on two cores kept
	// busy by twenty other processes (make test-under-load's worst).
	StartTimeout = 3 * time.Minute
	// StopTimeout bounds how long Close waits for RT's process group to
	// end after SIGTERM before it kills it.
	StopTimeout = 10 * time.Second
	// EnvCI is set in CI, where RT is installed: a test that needs RT then
	// fails without it instead of skipping.
	EnvCI = "CI"
)

// InstallHint says how to install RT.
const InstallHint = "make rt-install installs Request Tracker " + Version + " from Debian's packages (once per machine, about 3 minutes)"

// Installed returns nil when RT's packages are installed.
func Installed() error {
	for _, p := range []string{ServerPath, SetupPath, LibPath} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("rtlocal: Request Tracker is not installed (%s: %w): %s", p, errors.Unwrap(err), InstallHint)
		}
	}
	return nil
}

// Require fails t when RT is not installed and CI is set, and skips it
// when RT is not installed otherwise.
func Require(t testing.TB) {
	t.Helper()
	err := Installed()
	switch {
	case err == nil:
	case os.Getenv(EnvCI) != "":
		t.Fatalf("%v (CI is set: RT must be installed there)", err)
	default:
		t.Skipf("%v; without it the Request Tracker tests are skipped (CI runs them)", err)
	}
}

// Instance is a running RT of its own.
type Instance struct {
	// URL is RT's base URL (http://127.0.0.1:port), DESTINATION_URL.
	URL string
	// Token is an API token of root (DESTINATION_TOKEN); Queue the queue
	// the oncecall fields are applied to (RT_QUEUE).
	Token string
	Queue string
	// Addr is the host:port RT listens on.
	Addr string

	dir string
	mu  sync.Mutex
	// ln is the socket the next RT started serves on (Start's, until the
	// first Restart has handed it over).
	ln   *net.TCPListener
	cmd  *exec.Cmd
	done chan struct{}
	out  *tail
}

// Start runs a fresh RT on addr ("127.0.0.1:0" for any free port) until
// Close: a copy of the prepared database (built on the first Start of the
// machine, in 10 to 20 seconds), served in 2 to 3 seconds.
func Start(addr string) (*Instance, error) {
	if err := Installed(); err != nil {
		return nil, err
	}
	tmpl, err := prepared()
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("rtlocal: address %q: %w", addr, err)
	}
	// The socket RT serves on is bound here, port 0 included, and handed
	// to RT (listen): no port is released and hoped to stay free.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err // taken: said as net.Listen says it
	}
	host, _, _ := net.SplitHostPort(addr)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dir, err := os.MkdirTemp("", "oncecall-rt-")
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	in := &Instance{URL: "http://" + net.JoinHostPort(host, port), Token: tmpl.token, Queue: Queue, Addr: net.JoinHostPort(host, port), dir: dir, ln: ln.(*net.TCPListener)}
	if err := in.lay(tmpl.db); err != nil {
		_ = ln.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := in.Restart(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return in, nil
}

// lay writes the instance's folder: the database copied from db, RT's
// working folders and the site configuration.
func (in *Instance) lay(db string) error {
	for _, sub := range []string{"empty", "var", "mason", "sessions"} {
		if err := os.MkdirAll(filepath.Join(in.dir, sub), 0o755); err != nil {
			return err
		}
	}
	src, err := os.ReadFile(db)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(in.dir, "rt.db"), src, 0o600); err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(in.Addr)
	return os.WriteFile(filepath.Join(in.dir, "site.pm"), []byte(siteConfig(in.dir, in.URL, port)), 0o600)
}

// siteConfig is RT's site configuration for an instance in dir serving url.
func siteConfig(dir, url, port string) string {
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
	}
	lines := []string{
		"Set($rtname, 'oncecall.local');",
		"Set($Organization, 'oncecall.local');",
		"Set($DatabaseType, 'SQLite');",
		"Set($DatabaseName, " + q(filepath.Join(dir, "rt.db")) + ");",
		"Set($WebPath, '');",
		"Set($WebDomain, '127.0.0.1');",
		"Set($WebPort, " + port + ");",
		"Set($WebBaseURL, " + q(url) + ");",
		"Set($BcryptCost, " + strconv.Itoa(BcryptCost) + ");",
		"Set($VarPath, " + q(filepath.Join(dir, "var")) + ");",
		"Set($MasonDataDir, " + q(filepath.Join(dir, "mason")) + ");",
		"Set($MasonSessionDir, " + q(filepath.Join(dir, "sessions")) + ");",
		"Set($MailCommand, 'mbox');",
		"Set($LogToSyslog, undef);",
		"Set($LogToFile, undef);",
		"Set($LogToSTDERR, 'error');",
		"1;",
	}
	return strings.Join(lines, "\n") + "\n"
}

// env is the environment RT's programs run with for the instance in dir.
func env(dir string) []string {
	return append(os.Environ(), "RT_SITE_CONFIG="+filepath.Join(dir, "site.pm"), "RT_SITE_CONFIG_DIR="+filepath.Join(dir, "empty"))
}

// supervise runs RT's server (its arguments) under a shell that leads the
// process group: told to stop (SIGTERM from Stop, or from the kernel when
// the process that started it dies, see sysProcAttr), it stops the whole
// group, the server's prefork workers included, which would otherwise
// outlive a server killed alone.
const supervise = `trap 'trap - TERM INT; kill -TERM 0 2>/dev/null; wait; exit 0' TERM INT
"$0" "$@" &
wait $!`

// listenFD is the descriptor RT's server finds its listening socket on:
// the first of exec.Cmd's ExtraFiles.
const listenFD = 3

// testHookListening, when set, is called with the instance's address once
// RT's socket is bound and before RT starts.
var testHookListening func(addr string)

// Restart starts the instance's RT again after Stop, on the same address
// and database, and waits until it answers. RT does not bind the address
// itself: it serves on a socket bound here and passed on listenFD, the
// way Server::Starter hands sockets to the Starlet server RT runs
// (SERVER_STARTER_PORT), so the port Start read back is the one RT serves.
func (in *Instance) Restart() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		return errors.New("rtlocal: RT is running")
	}
	ln := in.ln
	in.ln = nil
	if ln == nil {
		l, err := net.Listen("tcp", in.Addr)
		if err != nil {
			return fmt.Errorf("rtlocal: RT's address: %w", err)
		}
		ln = l.(*net.TCPListener)
	}
	// RT holds its own copy of the socket; a stopped RT then refuses
	// connections, as nothing else holds it.
	defer func() { _ = ln.Close() }()
	sock, err := ln.File()
	if err != nil {
		return fmt.Errorf("rtlocal: RT's socket: %w", err)
	}
	defer func() { _ = sock.Close() }()
	if testHookListening != nil {
		testHookListening(in.Addr)
	}
	host, port, _ := net.SplitHostPort(in.Addr)
	out := &tail{}
	cmd := exec.Command("/bin/sh", "-c", supervise, ServerPath, "--host", host, "--port", port, "--max-workers", strconv.Itoa(Workers))
	cmd.Env = append(env(in.dir), "SERVER_STARTER_PORT="+in.Addr+"="+strconv.Itoa(listenFD))
	cmd.ExtraFiles = []*os.File{sock}
	cmd.Dir = in.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("rtlocal: start RT: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	in.cmd, in.done, in.out = cmd, done, out
	if err := in.wait(); err != nil {
		in.stop()
		return err
	}
	return nil
}

// wait polls RT until it answers an authenticated request for the queue.
// Each request may take what is left of StartTimeout: RT's first answers
// compile its pages, which a busy machine makes slow, and a shorter bound
// would give up on them again and again.
func (in *Instance) wait() error {
	client := &http.Client{}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(StartTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, in.URL+"/REST/2.0/queue/"+in.Queue, nil)
		req.Header.Set("Authorization", "token "+in.Token)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-in.done:
			return fmt.Errorf("rtlocal: RT on %s exited: %s", in.Addr, in.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rtlocal: RT on %s did not answer within %s: %s", in.Addr, StartTimeout, in.out.String())
		}
	}
}

// Stop stops RT (TERM to its process group, KILL after StopTimeout) and
// keeps its database for Restart.
func (in *Instance) Stop() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stop()
}

func (in *Instance) stop() {
	if in.cmd == nil {
		return
	}
	pgid := in.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(StopTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-in.done
	}
	// Workers that outlived their parent still belong to the group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	in.cmd, in.done = nil, nil
}

// Close stops RT and removes its folder.
func (in *Instance) Close() error {
	in.Stop()
	in.mu.Lock()
	if in.ln != nil {
		_ = in.ln.Close()
		in.ln = nil
	}
	in.mu.Unlock()
	return os.RemoveAll(in.dir)
}

// Logs returns the end of RT's output: its errors, such as a custom field
// it did not find and dropped.
func (in *Instance) Logs() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.out == nil {
		return ""
	}
	return in.out.String()
}

// maxTail is how much of RT's output is kept.
const maxTail = 64 << 10

// tail keeps the last maxTail bytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > maxTail {
		t.b = t.b[len(t.b)-maxTail:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

// Classify names RT's requests a fault proxy (helpdesk.Proxy) makes
// misbehave: a ticket create, and a ticket search (a lookup, or the
// adapter's check of the ticket it created). Everything else passes.
func Classify(r *http.Request) (helpdesk.Op, bool) {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, rt.TicketPath):
		return helpdesk.Create, true
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, rt.TicketsPath):
		return helpdesk.Lookup, true
	}
	return "", false
}

// KeyOf reads the delivery's key from an RT create's body (its KeyField),
// for a proxy's KeyRequests; "" when there is none.
func KeyOf(body []byte) string {
	var c struct {
		CustomFields map[string]any `json:"CustomFields"`
	}
	if json.Unmarshal(body, &c) != nil {
		return ""
	}
	k, _ := c.CustomFields[rt.KeyField].(string)
	return k
}

// StartProxy starts a fault proxy in front of the instance on a loopback
// port, until its Close: a front that forwards to RT as many requests at
// once as RT has workers (unless o says otherwise), and not one whose
// client gave up while it waited, except a create a Late fault holds: that
// one reaches RT after the fault's delay, its client there or not.
func (in *Instance) StartProxy(o helpdesk.ProxyOptions) (*helpdesk.Proxy, error) {
	if o.MaxInFlight == 0 {
		o.MaxInFlight = Workers
	}
	return helpdesk.StartProxy("127.0.0.1:0", in.URL, Classify, o)
}

// Page returns a page of RT's web interface (path, such as
// "/Helpers/TicketHistory?id=1") as root sees it after logging in with
// RootPassword: what a person is shown.
func (in *Instance) Page(path string) (string, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.PostForm(in.URL+"/NoAuth/Login.html", url.Values{"user": {"root"}, "pass": {RootPassword}})
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	resp, err = client.Get(in.URL + path)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("rtlocal: %s: %d %v", path, resp.StatusCode, err)
	}
	return string(b), nil
}

// Tickets lists every ticket RT holds (its deleted ones aside), as the
// local helpdesk lists its own (Search).
func (in *Instance) Tickets(ctx context.Context) ([]helpdesk.Ticket, error) {
	return Search(ctx, in.URL, in.Authorize, "id > 0")
}

// REST makes one REST 2.0 request to RT as root (path after the base URL,
// body encoded as JSON when not nil) and returns the status and the
// answer's body.
func (in *Instance) REST(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, in.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	in.Authorize(req)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// Authorize signs r with root's token.
func (in *Instance) Authorize(r *http.Request) { r.Header.Set("Authorization", "token "+in.Token) }

// Search lists the tickets of the RT at base that the TicketSQL query
// finds, oldest first, every page, each as the local helpdesk lists its
// own: RT's id, subject and priority, and from oncecall's fields the
// external id (TicketField), the key (KeyField), the tenant and the user
// (as Requester). auth signs each request.
func Search(ctx context.Context, base string, auth func(*http.Request), query string) ([]helpdesk.Ticket, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	var out []helpdesk.Ticket
	for page := 1; ; page++ {
		q := url.Values{"query": {query}, "fields": {"Subject,Priority,CustomFields"}, "orderby": {"id"}, "per_page": {"100"}, "page": {strconv.Itoa(page)}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+rt.TicketsPath+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		auth(req)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		var list struct {
			Pages float64 `json:"pages"`
			Items []struct {
				ID           json.Number `json:"id"`
				Subject      string      `json:"Subject"`
				Priority     string      `json:"Priority"`
				CustomFields []struct {
					Name   string   `json:"name"`
					Values []string `json:"values"`
				} `json:"CustomFields"`
			} `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("rtlocal: search: %d %v", resp.StatusCode, err)
		}
		for _, it := range list.Items {
			id, _ := it.ID.Int64()
			t := helpdesk.Ticket{ID: id, Title: it.Subject, Priority: it.Priority, Via: rt.Name}
			for _, cf := range it.CustomFields {
				v := strings.Join(cf.Values, ",")
				switch cf.Name {
				case rt.TicketField:
					t.ExternalID = v
				case rt.KeyField:
					t.IdempotencyKey = v
				case rt.TenantField:
					t.Tenant = v
				case rt.UserField:
					t.Requester = v
				}
			}
			out = append(out, t)
		}
		if float64(page) >= list.Pages {
			return out, nil
		}
	}
}
