package loadtest_test

// These tests start the real server binary (cmd/oncecall, built by the test
// with go build) on free loopback ports and talk to it over HTTP, from this
// process and from separate client processes (internal/bench/cmd/oncecall-load), then count
// items in the store it used.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

var serverBin, loadBin string

// TestMain builds the binaries, runs the tests, stops the embedded store
// they shared and fails the package when a goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(withBinaries{m})) }

// withBinaries builds the server and the load client into a temporary
// folder before the tests and removes it after them.
type withBinaries struct{ m *testing.M }

func (w withBinaries) Run() int {
	dir, err := os.MkdirTemp("", "oncecall-loadtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	bins, err := loadtest.Build(ctx, dir, "cmd/oncecall", "internal/bench/cmd/oncecall-load")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	serverBin, loadBin = bins[0], bins[1]
	return w.m.Run()
}

var (
	nonceOnce sync.Once
	testNonce string
)

// validNonce is a cheap (cost 4) nonce of the demo hook key; the server
// accepts costs up to 10 and takes the same path for all of them.
func validNonce(_ testing.TB) string {
	nonceOnce.Do(func() {
		var err error
		if testNonce, err = nonce.Generate(localdb.DemoHookKey, nonce.MinCost); err != nil {
			panic(err)
		}
	})
	return testNonce
}

// startServer runs the server binary. With DYNAMODB_ENDPOINT set it uses
// that store (and a table of its own, deleted afterwards); otherwise its own
// embedded store.
func startServer(t *testing.T, env ...string) *loadtest.Server {
	t.Helper()
	env = append([]string{"HOOK_KEY=" + localdb.DemoHookKey, "LOG_LEVEL=INFO"}, env...)
	if dynamotest.External() && !hasVar(env, "DYNAMODB_ENDPOINT") {
		table := "oncecall-test-" + dynamotest.RandomHex(6)
		env = append(env, "DYNAMODB_ENDPOINT="+os.Getenv(dynamotest.EnvEndpoint), "TABLE_NAME="+table)
		t.Cleanup(func() { dropTable(t, os.Getenv(dynamotest.EnvEndpoint), table) })
	}
	s, err := loadtest.Start(serverBin, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

func dropTable(t *testing.T, endpoint, table string) {
	c := dynamotest.NewClient(t, endpoint, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
}

// storeOf is the server's table, read with a real SDK client.
func storeOf(t *testing.T, s *loadtest.Server) *dynamotest.Env {
	return &dynamotest.Env{Client: dynamotest.NewClient(t, s.Endpoint, nil), Table: s.Table, Endpoint: s.Endpoint}
}

// TestTwoProcessesTenIdenticalCalls releases ten identical calls at once
// from two client processes, five each: one creates the ticket, nine are
// answered with it, deduplicated, and the store holds one ticket.
func TestTwoProcessesTenIdenticalCalls(t *testing.T) {
	s := startServer(t)
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	procs := make([]proc, 2)
	for i := range procs {
		cmd := exec.Command(loadBin, "client", "-url", s.URL+"/callback", "-nonce", validNonce(t),
			"-user", "user-a", "-request-id", "r-two-processes", "-args", `{"title":"Cannot sign in","priority":"high"}`, "-n", "5")
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		procs[i] = proc{cmd, stdin, bufio.NewScanner(stdout)}
	}
	for i, p := range procs {
		if !p.out.Scan() || p.out.Text() != "ready" {
			t.Fatalf("client %d did not get ready: %q", i, p.out.Text())
		}
	}
	for _, p := range procs { // release both
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var results []loadtest.Result
	for i, p := range procs {
		for p.out.Scan() {
			var r loadtest.Result
			if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
				t.Fatalf("client %d printed %q", i, p.out.Text())
			}
			results = append(results, r)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	if len(results) != 10 {
		t.Fatalf("%d results, want 10", len(results))
	}
	outcomes := map[string]int{}
	for _, r := range results {
		if r.Status != http.StatusOK || r.TicketID != results[0].TicketID || r.TicketID == "" {
			t.Fatalf("results differ: %+v vs %+v", r, results[0])
		}
		outcomes[r.Outcome]++
	}
	if outcomes["created"] != 1 || outcomes["deduplicated"] != 9 {
		t.Fatalf("outcomes %v, want 1 created and 9 deduplicated", outcomes)
	}
	store := storeOf(t, s)
	if n := store.Count(t, "ticket"); n != 1 {
		t.Fatalf("%d ticket items, want 1", n)
	}
	if n := store.Count(t, "operation"); n != 1 {
		t.Fatalf("%d operation items, want 1", n)
	}
}

// TestMixedRun sends 1,000 calls over 100 operations of three users in two
// tenants, 16 at a time, and compares every answer with the store.
func TestMixedRun(t *testing.T) {
	s := startServer(t)
	const calls, ops = 1000, 100
	prefix := "mixed-" + dynamotest.RandomHex(4)
	plan, err := loadtest.Mixed(loadtest.Plan{Calls: calls, Ops: ops, Prefix: prefix, Seed: suitetest.Seed(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hc := loadtest.NewClient(16)
	results := loadtest.Run(ctx, hc, s.URL+"/callback", []string{validNonce(t)}, plan, 16)
	hc.CloseIdleConnections()
	store := storeOf(t, s)
	stored, err := loadtest.StoredTickets(ctx, store.Client, s.Table, prefix)
	if err != nil {
		t.Fatal(err)
	}
	report := loadtest.Tally(plan, results, stored)
	t.Logf("\n%s", report)
	if err := report.Check(); err != nil {
		t.Fatal(err)
	}
	if report.Requests != calls || report.Operations != ops {
		t.Fatalf("%d requests over %d operations, want %d over %d", report.Requests, report.Operations, calls, ops)
	}
	if n := store.Count(t, "operation"); n != ops {
		t.Fatalf("%d operation items for %d operations", n, ops)
	}
	if report.Rejected == 0 || report.NotFound == 0 || report.Deduplicated < calls/2 {
		t.Fatalf("the run was not mixed: %+v", report)
	}
	logs := s.Logs()
	for _, secret := range []string{validNonce(t), localdb.DemoHookKey, "Load " + prefix, "Generated by the load run"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the server log contains %q", secret)
		}
	}
}

// TestRestartReusesStoredResult crashes the server (SIGKILL) after a call
// and starts a new process against the same persistent store: the repeat
// is answered from the store. The store is DYNAMODB_ENDPOINT when set, else
// the embedded one this test binary runs (it outlives both servers).
func TestRestartReusesStoredResult(t *testing.T) {
	endpoint, _ := dynamotest.Endpoint(t)
	table := "oncecall-test-" + dynamotest.RandomHex(6)
	t.Cleanup(func() { dropTable(t, endpoint, table) })
	env := []string{"DYNAMODB_ENDPOINT=" + endpoint, "TABLE_NAME=" + table}
	call := loadtest.Identical(1, "user-a", "r-restart", map[string]any{"title": "Survives a restart"})[0]
	hc := loadtest.NewClient(1)

	first := startServer(t, env...)
	a := loadtest.Do(context.Background(), hc, first.URL+"/callback", validNonce(t), call)
	if a.Status != 200 || a.Outcome != "created" {
		t.Fatalf("first call: %+v", a)
	}
	first.Kill()
	hc.CloseIdleConnections()

	second := startServer(t, env...)
	b := loadtest.Do(context.Background(), hc, second.URL+"/callback", validNonce(t), call)
	if b.Status != 200 || b.Outcome != "deduplicated" || b.TicketID != a.TicketID {
		t.Fatalf("after the restart: %+v; first answer %+v", b, a)
	}
	store := storeOf(t, second)
	if n := store.Count(t, "ticket"); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
}

// headerLimit is the local server's header limit as README.md and
// SECURITY.md state it: the request line and every header, up to and
// including the empty line that ends them, 16 KiB; one byte more is 431.
const headerLimit = 16 << 10

// rawRequest is a callback whose request line and headers take exactly
// size bytes, padded with one header.
func rawRequest(t *testing.T, size int, body []byte) string {
	t.Helper()
	head := fmt.Sprintf("POST /callback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"X-Request-Nonce: %s\r\nContent-Length: %d\r\n", validNonce(t), len(body))
	const padLine = "X-Pad: \r\n"
	pad := size - len(head) - len(padLine) - len("\r\n")
	if pad < 0 {
		t.Fatalf("a %d-byte header cannot hold the request", size)
	}
	req := head + "X-Pad: " + strings.Repeat("p", pad) + "\r\n\r\n"
	if len(req) != size {
		t.Fatalf("built a %d-byte header, want %d", len(req), size)
	}
	return req + string(body)
}

// TestOversizedHeaderOnTheServer sends the real server callbacks whose
// headers are exactly at its limit, one byte past it, 24 KiB (which
// net/http alone, without the server's correction for its slack, would
// let through) and a megabyte: the first is served, the others are
// refused with 431 before the handler, and nothing is written for them.
// Each request is written on a raw connection while the answer is read,
// because the server answers and closes long before a megabyte of header
// has been sent, and an HTTP client that writes first would see the
// closed connection instead of the answer.
func TestOversizedHeaderOnTheServer(t *testing.T) {
	s := startServer(t)
	send := func(size int, requestID string) (*http.Response, []byte) {
		t.Helper()
		body := loadtest.Identical(1, "user-a", requestID, map[string]any{"title": "x"})[0].Body
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		req := rawRequest(t, size, body)
		go func() { _, _ = io.WriteString(conn, req) }()
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%d-byte header: no answer: %v", size, err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res, raw
	}
	for _, size := range []int{headerLimit + 1, 24 << 10, 1 << 20} {
		res, _ := send(size, fmt.Sprintf("r-header-%d", size))
		if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("%d-byte header (limit %d): status %d, want 431", size, headerLimit, res.StatusCode)
		}
	}
	store := storeOf(t, s)
	if store.Count(t, "ticket") != 0 || store.Count(t, "operation") != 0 {
		t.Fatal("an oversized header wrote something")
	}
	// At the limit, after the refusals: served, and written once.
	res, raw := send(headerLimit, "r-header-at-limit")
	if res.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"status":"created"`) {
		t.Fatalf("%d-byte header, at the limit: %d %s", headerLimit, res.StatusCode, raw)
	}
	if n := store.Count(t, "ticket"); n != 1 {
		t.Fatalf("%d tickets after the call at the limit, want 1", n)
	}
}

// TestLogLevel starts the real server with LOG_LEVEL=DEBUG and with
// LOG_LEVEL=INFO, each in front of a store that throttles its first
// transaction, and makes the same two calls. At DEBUG the log says how
// long each call waited for its user record after the nonce's check, which
// key policy was used and which store attempt failed with which AWS error
// code; at INFO it holds no DEBUG line.
func TestLogLevel(t *testing.T) {
	debugLines := []string{`"msg":"user record","waited_ms":`,
		`"msg":"key policy","function":"create_ticket","policy":"arguments"`,
		`"msg":"store attempt failed","op":"TransactWriteItems","code":"ThrottlingException"`}
	for _, level := range []string{"DEBUG", "INFO"} {
		t.Run(level, func(t *testing.T) {
			endpoint, _ := dynamotest.Endpoint(t)
			table := "oncecall-test-" + dynamotest.RandomHex(6)
			t.Cleanup(func() { dropTable(t, endpoint, table) })
			proxy := dynamotest.NewProxy(t, endpoint)
			proxy.Inject("TransactWriteItems", dynamotest.Fault{Error: "ThrottlingException"})
			s := startServer(t, "DYNAMODB_ENDPOINT="+proxy.URL, "TABLE_NAME="+table, "LOG_LEVEL="+level)
			call := loadtest.Identical(1, "user-a", "r-log-level", map[string]any{"title": "Log levels"})[0]
			hc := loadtest.NewClient(1)
			defer hc.CloseIdleConnections()
			for _, want := range []string{"created", "deduplicated"} {
				if r := loadtest.Do(context.Background(), hc, s.URL+"/callback", validNonce(t), call); r.Outcome != want {
					t.Fatalf("call: %+v, want %s", r, want)
				}
			}
			logs := s.Logs()
			for deadline := time.Now().Add(10 * time.Second); strings.Count(logs, `"msg":"callback"`) < 2 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				logs = s.Logs()
			}
			if n := strings.Count(logs, `"msg":"callback"`); n != 2 {
				t.Fatalf("%d call lines in the log, want 2:\n%s", n, logs)
			}
			for _, line := range debugLines {
				if strings.Contains(logs, line) != (level == "DEBUG") {
					t.Errorf("LOG_LEVEL=%s: %s in the log: %v\n%s", level, line, level != "DEBUG", logs)
				}
			}
			if level == "INFO" && strings.Contains(logs, `"level":"DEBUG"`) {
				t.Errorf("LOG_LEVEL=INFO logged at DEBUG:\n%s", logs)
			}
			for _, s := range []string{"user-a", "r-log-level", "Log levels", validNonce(t), localdb.DemoHookKey} {
				if strings.Contains(logs, s) {
					t.Errorf("the log carries %q", s)
				}
			}
		})
	}
}
