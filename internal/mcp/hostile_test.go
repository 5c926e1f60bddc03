package mcp_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/hostiletest"
)

// TestHostileCatalogue sends every case of the MCP door's hostile
// catalogue over HTTP to one server and checks its answer, what it wrote,
// and that it disclosed nothing of an operation seeded through the
// callback before the first case. The cases run in catalogue order.
func TestHostileCatalogue(t *testing.T) {
	r := newRig(t, mcp.Options{})
	status, seeded := r.postCallback(callbackBody(hostiletest.Owner, hostiletest.SecretRequestID, "create_ticket",
		map[string]any{"title": hostiletest.SecretTitle, "priority": "urgent"}))
	secret := strings.Split(strings.Split(string(seeded), `"ticket_id":"`)[1], `"`)[0]
	if status != http.StatusOK || secret == "" {
		t.Fatalf("seed: %d %s", status, seeded)
	}
	nonces, err := hostiletest.NewNonces(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cases := hostiletest.MCPCases(nonces)
	if len(cases) < 40 {
		t.Fatalf("only %d cases in the catalogue", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			body := bytes.ReplaceAll(c.Body, []byte(hostiletest.SecretPlaceholder), []byte(secret))
			req, err := http.NewRequest(http.MethodPost, r.srv.URL+mcp.Path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for _, h := range c.Headers {
				req.Header[h.Name] = append(req.Header[h.Name], h.Value) // the name as written, on the wire
			}
			tickets, ops := r.tickets(), r.operations()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if ct := res.Header.Get("Content-Type"); !c.Plain && ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			for _, w := range c.Check(res.StatusCode, raw, body, secret) {
				t.Error(w)
			}
			if got := r.tickets() - tickets; got != c.Writes {
				t.Errorf("%d tickets written, want %d", got, c.Writes)
			}
			if got := r.operations() - ops; got != c.Writes {
				t.Errorf("%d operations written, want %d", got, c.Writes)
			}
		})
	}
	logs := r.logs.String()
	for _, s := range []string{nonces.Valid, nonces.WrongKey, localdb.DemoHookKey, hostiletest.SecretTitle, "Cannot sign in"} {
		if strings.Contains(logs, s) {
			t.Errorf("the log contains %q", s)
		}
	}
}

// TestDocsSayWhatTheDoorClips: docs/mcp.md's sentences on clipped
// refusals and unknown methods hold for the constants and the catalogue
// above (TestHostileCatalogue checks every refusal against them).
func TestDocsSayWhatTheDoorClips(t *testing.T) {
	raw, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(raw)), " ")
	for _, s := range []string{
		"Every refusal leaves the door under 1 KiB, the SDK's own included",
		"clips each quoted value to 64 bytes and the message to about 240, and removes anything shaped as a nonce",
		"| Unknown method | 400; at 2026-07-28: 404 | error `-32601` `… unsupported`, with the request's id |",
		"a string over 32 KiB (outside the arguments, whatever the arguments hold), more than 512 values outside the arguments or in them (`mcp.MaxValues`) | 400 | error `-32700` |",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("docs/mcp.md no longer says %q", s)
		}
	}
	if mcp.MaxRefusalBytes != 1024 || hostiletest.MaxAnswerBytes != mcp.MaxRefusalBytes {
		t.Errorf("MaxRefusalBytes %d: the docs say 1 KiB", mcp.MaxRefusalBytes)
	}
}

// TestSecuritySaysWhatAnUnauthenticatedRequestCosts: SECURITY.md's
// sentence on the cost bound names the limit and the benchmark that
// measures it (make bench's Go part checks the tenth).
func TestSecuritySaysWhatAnUnauthenticatedRequestCosts(t *testing.T) {
	raw, err := os.ReadFile("../../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "`mcp.MaxValues` (512 values outside `params.arguments`, 512 in them), counted before the SDK decodes anything: every shape measured stays under a tenth of one cost-9 BCrypt verification (`BenchmarkUnauthenticated`"
	if !strings.Contains(strings.Join(strings.Fields(string(raw)), " "), want) || mcp.MaxValues != 512 {
		t.Errorf("SECURITY.md no longer says %q (MaxValues %d)", want, mcp.MaxValues)
	}
}
