package eventset_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/crypto/bcrypt"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/eventset"
)

const dir = "../../../events"

func load(t *testing.T) *eventset.Manifest {
	t.Helper()
	m, err := eventset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEventsAreHTTPAPIv2Events checks each file is shaped as API Gateway
// sends a payload 2.0 event, so that `sam local invoke -e` and the tests
// see what the function sees on AWS.
func TestEventsAreHTTPAPIv2Events(t *testing.T) {
	m := load(t)
	if len(m.Cases) < 16 {
		t.Errorf("%d events; the response table has at least 16 rows to cover", len(m.Cases))
	}
	for _, c := range m.Cases {
		raw, err := os.ReadFile(filepath.Join(dir, c.Event))
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayV2HTTPRequest
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Errorf("%s: not an HTTP API v2 event: %v", c.Event, err)
			continue
		}
		if ev.Version != "2.0" {
			t.Errorf("%s: version %q", c.Event, ev.Version)
		}
		for k := range ev.Headers {
			if k != strings.ToLower(k) {
				t.Errorf("%s: header %q is not lower case, as API Gateway sends it", c.Event, k)
			}
		}
		h := ev.RequestContext.HTTP
		route := h.Method + " " + h.Path
		if ev.RouteKey != route || ev.RequestContext.RouteKey != route || ev.RawPath != h.Path {
			t.Errorf("%s: routeKey %q, requestContext.routeKey %q, rawPath %q, http %q disagree", c.Event, ev.RouteKey, ev.RequestContext.RouteKey, ev.RawPath, route)
		}
		if !slices.Contains([]string{"POST /callback", "GET /functions", "POST /mcp"}, route) {
			t.Errorf("%s: route %q is not one the template serves", c.Event, route)
		}
		if ev.RequestContext.Stage != "$default" || ev.RequestContext.DomainName == "" {
			t.Errorf("%s: stage %q domain %q", c.Event, ev.RequestContext.Stage, ev.RequestContext.DomainName)
		}
		if h.Method == "POST" {
			if !json.Valid([]byte(ev.Body)) || ev.IsBase64Encoded {
				t.Errorf("%s: the body is not plain JSON", c.Event)
			}
			if n, _ := strconv.Atoi(ev.Headers["content-length"]); n != len(ev.Body) {
				t.Errorf("%s: content-length %s for a %d-byte body", c.Event, ev.Headers["content-length"], len(ev.Body))
			}
		}
		if c.TicketFrom != "" && !strings.Contains(ev.Body, eventset.PlaceholderTicketID) {
			t.Errorf("%s: ticket_from without the placeholder ticket id", c.Event)
		}
		if !slices.Contains(callback.Outcomes, c.Outcome) {
			t.Errorf("%s: outcome %q is not one of callback.Outcomes", c.Event, c.Outcome)
		}
	}
}

// TestEventNoncesAreWhatTheManifestSays checks each nonce against the
// documented local hook key. That a valid nonce matches is shown by the real
// bootstrap accepting it (functions/callback plays every event); what the
// bootstrap cannot show is checked here with BCrypt itself: that the wrong
// one is a well-formed hash of another key, and that the over-cost one is a
// genuine hash of the hook key (the bootstrap refuses it before hashing).
func TestEventNoncesAreWhatTheManifestSays(t *testing.T) {
	m := load(t)
	for _, c := range m.Cases {
		raw, _ := os.ReadFile(filepath.Join(dir, c.Event))
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		h, present := eventset.Nonce(ev)
		if c.Nonce == eventset.NonceMissing {
			if present {
				t.Errorf("%s: has a nonce, expected none", c.Event)
			}
			continue
		}
		cost, err := bcrypt.Cost([]byte(h))
		if err != nil || len(h) != nonce.HashLength {
			t.Errorf("%s: %q is not a BCrypt hash: %v", c.Event, h, err)
			continue
		}
		if c.Nonce == eventset.NonceValid {
			if cost != 9 {
				t.Errorf("%s: cost %d, want AIVAX's 9", c.Event, cost)
			}
			continue
		}
		matches := bcrypt.CompareHashAndPassword([]byte(h), []byte(localdb.DemoHookKey)) == nil
		switch c.Nonce {
		case eventset.NonceWrongKey:
			if matches || cost > nonce.DefaultMaxCost {
				t.Errorf("%s: wrong-key nonce matches=%v cost=%d", c.Event, matches, cost)
			}
		case eventset.NonceOverCost:
			if !matches || cost <= nonce.DefaultMaxCost {
				t.Errorf("%s: over-cost nonce matches=%v cost=%d, want a matching hash above %d", c.Event, matches, cost, nonce.DefaultMaxCost)
			}
		}
	}
}

func names(cs []eventset.Case) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Event)
	}
	return out
}

func TestPlanRunsDependenciesFirst(t *testing.T) {
	m := load(t)
	for _, tc := range []struct {
		ask  []string
		want []string
	}{
		{[]string{"events/functions.json"}, []string{"functions.json"}},
		{[]string{"events/duplicate.json"}, []string{"created.json", "duplicate.json"}},
		{[]string{"get_ticket.json", "duplicate.json"}, []string{"created.json", "duplicate.json", "get_ticket.json"}},
	} {
		plan, err := m.Plan(tc.ask...)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(plan); !slices.Equal(got, tc.want) {
			t.Errorf("Plan(%v) = %v, want %v", tc.ask, got, tc.want)
		}
	}
	if _, err := m.Plan("nope.json"); err == nil {
		t.Error("Plan of an unknown event succeeded")
	}
}

func TestLoadRefusesAnInconsistentManifest(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		d := t.TempDir()
		for n, s := range files {
			if err := os.WriteFile(filepath.Join(d, n), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	entry := func(ev, extra string) string {
		return `{"event":"` + ev + `","row":"r","nonce":"valid","status":200,"outcome":"created","body":{"status":"created"}` + extra + `}`
	}
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"missing file":        {map[string]string{"expected.json": `{"events":[` + entry("a.json", "") + `]}`}, "a.json"},
		"orphan event":        {map[string]string{"a.json": "{}", "b.json": "{}", "expected.json": `{"events":[` + entry("a.json", "") + `]}`}, "b.json has no entry"},
		"dependency after":    {map[string]string{"a.json": "{}", "b.json": "{}", "expected.json": `{"events":[` + entry("a.json", `,"after":["b.json"]`) + `,` + entry("b.json", "") + `]}`}, "not listed before"},
		"unknown nonce kind":  {map[string]string{"a.json": "{}", "expected.json": `{"events":[` + strings.Replace(entry("a.json", ""), `"valid"`, `"fine"`, 1) + `]}`}, "nonce"},
		"unknown field":       {map[string]string{"a.json": "{}", "expected.json": `{"events":[` + entry("a.json", `,"stauts":200`) + `]}`}, "stauts"},
		"listed twice":        {map[string]string{"a.json": "{}", "expected.json": `{"events":[` + entry("a.json", "") + `,` + entry("a.json", "") + `]}`}, "twice"},
		"no expected outcome": {map[string]string{"a.json": "{}", "expected.json": `{"events":[{"event":"a.json","nonce":"valid"}]}`}, "needs status"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := eventset.Load(write(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	m := load(t)
	created, _ := m.Case("created.json")
	dup, _ := m.Case("duplicate.json")
	get, _ := m.Case("get_ticket.json")
	logLine := func(o string) string { return `{"level":"INFO","message":"callback","outcome":"` + o + `"}` }
	emfLine := func(o string) string { return `{"_aws":{},"outcome":"` + o + `"}` }
	resp := func(status int, body string) events.APIGatewayV2HTTPResponse {
		return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: body, Headers: map[string]string{"content-type": "application/json"}}
	}
	p := m.Player()
	if err := p.Check(created, eventset.Result{Response: resp(200, `{"status":"created","ticket_id":"t-1","deduplicated":false}`), Output: []string{"START", logLine("created"), emfLine("created")}}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]eventset.Result{
		"other ticket":    {Response: resp(200, `{"status":"created","ticket_id":"t-2","deduplicated":true}`), Output: []string{logLine("deduplicated")}},
		"wrong status":    {Response: resp(500, `{"status":"created","ticket_id":"t-1","deduplicated":true}`), Output: []string{logLine("deduplicated")}},
		"wrong outcome":   {Response: resp(200, `{"status":"created","ticket_id":"t-1","deduplicated":true}`), Output: []string{logLine("created")}},
		"metrics differ":  {Response: resp(200, `{"status":"created","ticket_id":"t-1","deduplicated":true}`), Output: []string{logLine("deduplicated"), emfLine("created")}},
		"no log line":     {Response: resp(200, `{"status":"created","ticket_id":"t-1","deduplicated":true}`)},
		"flag missing":    {Response: resp(200, `{"status":"created","ticket_id":"t-1"}`), Output: []string{logLine("deduplicated")}},
		"not JSON":        {Response: resp(200, `created`), Output: []string{logLine("deduplicated")}},
		"no content-type": {Response: events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: `{"status":"created","ticket_id":"t-1","deduplicated":true}`}, Output: []string{logLine("deduplicated")}},
	} {
		if err := p.Check(dup, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := p.Check(dup, eventset.Result{Response: resp(200, `{"status":"created","ticket_id":"t-1","deduplicated":true}`), Output: []string{logLine("deduplicated")}}); err != nil {
		t.Errorf("the right answer: %v", err)
	}
	ev, err := p.Event(get)
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(ev, &req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(req.Body, `"ticket_id":"t-1"`) || strings.Contains(req.Body, eventset.PlaceholderTicketID) {
		t.Errorf("get_ticket body after substitution: %s", req.Body)
	}
	if _, err := m.Player().Event(get); err == nil {
		t.Error("get_ticket played before created")
	}
}
