package mcp_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/mcp"
)

// TestAcceptHeader: what docs/mcp.md's response table and troubleshooting
// say of Accept. curl's default, `*/*`, and the two types Streamable HTTP
// names are served; an Accept that admits neither JSON nor an event stream
// is refused with 400 before any JSON-RPC answer.
func TestAcceptHeader(t *testing.T) {
	r := newRig(t, mcp.Options{})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for accept, want := range map[string]int{
		"*/*":                                 http.StatusOK,
		"application/json, text/event-stream": http.StatusOK,
		"text/html":                           http.StatusBadRequest,
	} {
		if p := r.postRaw(list, "Accept", accept); p.status != want {
			t.Errorf("Accept: %s: %d %s, want %d", accept, p.status, p.raw, want)
		}
	}
	for page, says := range map[string]string{
		"../../docs/mcp.md":             "| `Accept` that admits neither `application/json` nor `text/event-stream` (curl's default, `*/*`, admits both and is served) | 400",
		"../../docs/troubleshooting.md": "its default\n`Accept: */*` is served",
	} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), says) {
			t.Errorf("%s does not say %q", page, says)
		}
	}
}
