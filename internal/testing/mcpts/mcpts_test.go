package mcpts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// installTimeout bounds npm ci (the packages come from the npm registry,
// or npm's cache when it has them); runTimeout bounds the client's run.
const (
	installTimeout = 5 * time.Minute
	runTimeout     = time.Minute
)

// install puts the pinned SDK into .tools/mcpts/<lock hash>/ once and
// returns that folder, holding client.mjs and node_modules.
func install(t *testing.T) string {
	t.Helper()
	lock, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", ".tools", "mcpts", hex.EncodeToString(sum[:8])))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "client.mjs"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s (node and npm are needed for this test): %v\n%s", dir, err, out)
	}
	return dir
}

// TestTypeScriptSDKClient: the TypeScript SDK connects (initialize, then
// requests), lists both tools, calls create_ticket twice under one
// _meta.request_id (one ticket, the second deduplicated), once without
// one (an isError result it can show the model), and once with a forged
// nonce (an error, nothing written).
func TestTypeScriptSDKClient(t *testing.T) {
	dir := install(t)
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	if _, err := localdb.SeedDemo(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	h := callback.NewHandler(v, store, nil)
	srv := httptest.NewServer(httpapi.New(h, httpapi.Options{}))
	t.Cleanup(srv.Close)
	n, err := nonce.Generate(localdb.DemoHookKey, 9)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", srv.URL+mcp.Path, n, "ts-sdk-1")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\nstderr: %s\nstdout: %s", err, stderr.String(), out)
	}
	var got struct {
		ProtocolVersion string
		ServerName      string
		Tools           []struct {
			Name         string
			OutputSchema map[string]any
			Annotations  map[string]bool
		}
		Calls []struct {
			IsError           bool
			Content           []struct{ Type, Text string }
			StructuredContent map[string]any
		}
		Denied string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	t.Logf("TypeScript SDK: protocol %s, forged nonce refused with %q", got.ProtocolVersion, got.Denied)
	if got.ProtocolVersion != mcp.Version20251125 && got.ProtocolVersion != mcp.Version20250618 || got.ServerName != mcp.ServerName {
		t.Errorf("negotiated %q with %q", got.ProtocolVersion, got.ServerName)
	}
	if len(got.Tools) != 2 || got.Tools[0].Name != "create_ticket" || got.Tools[1].Name != "get_ticket" ||
		got.Tools[0].OutputSchema == nil || !got.Tools[1].Annotations["readOnlyHint"] || !got.Tools[0].Annotations["idempotentHint"] {
		t.Errorf("tools %+v", got.Tools)
	}
	if len(got.Calls) != 3 {
		t.Fatalf("%d calls: %s", len(got.Calls), out)
	}
	first, second, missing := got.Calls[0], got.Calls[1], got.Calls[2]
	if first.IsError || second.IsError || first.StructuredContent["deduplicated"] != false || second.StructuredContent["deduplicated"] != true ||
		first.StructuredContent["ticket_id"] == nil || first.StructuredContent["ticket_id"] != second.StructuredContent["ticket_id"] {
		t.Errorf("two calls under one request_id: %+v, %+v", first, second)
	}
	if !missing.IsError || len(missing.Content) != 1 || !strings.HasPrefix(missing.Content[0].Text, "missing_request_id: params._meta.request_id is missing") {
		t.Errorf("without a request_id: %+v", missing)
	}
	if !strings.Contains(got.Denied, "invalid_nonce") && !strings.Contains(got.Denied, "not a BCrypt hash") {
		t.Errorf("a forged nonce: %q", got.Denied)
	}
	if n := env.Count(t, "ticket"); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}
