package loadtest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/testing/doctest"
	"github.com/oncecall/oncecall/internal/testing/tryagain"
)

const outcomeKey = "doc-outcome-key-0123456789abcdef"

// TestTryAgainAfterALostAnswer runs the application's "try again" of
// docs/connect-aivax.md against the local server (the bin/oncecall make
// run serves): the ticket is created and its answer lost between oncecall
// and the application; the user's "try again" reads the outcome, learns
// the ticket and sends nothing: one ticket. A request that never reached
// oncecall reads as nothing stored, and the retry under the same id
// creates its ticket.
func TestTryAgainAfterALostAnswer(t *testing.T) {
	s := startServer(t, "OUTCOME_KEY="+outcomeKey)
	ctx := context.Background()
	n := validNonce(t)
	sends := 0
	send := func(requestID string) error {
		sends++
		body := `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"VPN drops every hour"}},` +
			`"context":{"externalUserId":"user-a","metadata":{"request_id":"` + requestID + `"}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/callback", strings.NewReader(body))
		req.Header.Set("X-Request-Nonce", n)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		return res.Body.Close()
	}

	// The first attempt: oncecall creates the ticket; the answer is lost
	// on its way back (the application reads none of it).
	if err := send("app-lost-1"); err != nil {
		t.Fatal(err)
	}
	ticketID, sent, err := tryagain.TryAgain(ctx, s.URL, outcomeKey, "user-a", "app-lost-1", send)
	if err != nil || sent || ticketID == "" {
		t.Fatalf("try again after a lost answer: ticket %q, sent again %v, %v; want the ticket, nothing sent", ticketID, sent, err)
	}
	if got := countTickets(t, s); got != 1 {
		t.Fatalf("%d tickets, want 1", got)
	}

	// A request that never reached oncecall: nothing stored, the same id
	// sent again, its ticket created once.
	if o, err := tryagain.ReadOutcome(ctx, s.URL, outcomeKey, "user-a", "app-never-sent"); err != nil || o.Status != "none" {
		t.Fatalf("an id that never reached oncecall: %+v %v", o, err)
	}
	ticketID, sent, err = tryagain.TryAgain(ctx, s.URL, outcomeKey, "user-a", "app-never-sent", send)
	if err != nil || !sent || ticketID == "" || sends != 2 {
		t.Fatalf("try again after nothing arrived: ticket %q, sent %v, %v", ticketID, sent, err)
	}
	if got := countTickets(t, s); got != 2 {
		t.Fatalf("%d tickets, want 2", got)
	}
	// Another user of the tenant learns nothing of user-a's id.
	if o, err := tryagain.ReadOutcome(ctx, s.URL, outcomeKey, "user-b", "app-lost-1"); err != nil || o.Status != "none" || o.TicketID != "" {
		t.Fatalf("another user's read: %+v %v", o, err)
	}
	// The hook key is no outcome key.
	if _, err := tryagain.ReadOutcome(ctx, s.URL, "rehearsal-hook-key-0123456789abcdef", "user-a", "app-lost-1"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("read with another key: %v", err)
	}
}

func countTickets(t *testing.T, s *loadtest.Server) int {
	t.Helper()
	return storeOf(t, s).Count(t, "ticket")
}

// TestTryAgainIsThePagesCode: docs/connect-aivax.md shows TryAgain and
// ReadOutcome as the test above runs them, byte for byte.
func TestTryAgainIsThePagesCode(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "connect-aivax.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "internal", "testing", "tryagain", "tryagain.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"func ReadOutcome(", "func TryAgain("} {
		i := bytes.Index(src, []byte("// "+strings.TrimSuffix(strings.TrimPrefix(fn, "func "), "(")))
		j := bytes.Index(src[i:], []byte("\n}\n"))
		if i < 0 || j < 0 {
			t.Fatalf("%s not found in tryagain.go", fn)
		}
		if code := src[i : i+j+2]; !bytes.Contains(page, code) {
			t.Errorf("docs/connect-aivax.md does not show tryagain.go's %s as it is:\n%s", fn, code)
		}
	}
}
