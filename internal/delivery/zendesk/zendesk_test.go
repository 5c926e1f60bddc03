package zendesk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/zendesk"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/testing/desttest"
)

// TestMain fails the package when a goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	email    = "agent@example.com"
	apiToken = "zd-api-token-SECRET-1"
	oauth    = "zd-oauth-token-SECRET-2"
)

var creds = zendesk.Credentials{Email: email, APIToken: apiToken}

func newDest(t testing.TB, hd *helpdesk.Server, o zendesk.Options) *zendesk.Destination {
	t.Helper()
	d, err := zendesk.New(hd.URL(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.CloseIdleConnections)
	return d
}

var adapter = desttest.Adapter{
	New: func(t testing.TB, hd *helpdesk.Server, timeout time.Duration) desttest.Destination {
		return newDest(t, hd, zendesk.Options{Credentials: creds, Timeout: timeout})
	},
	Options: helpdesk.Options{ZendeskEmail: email, ZendeskAPIToken: apiToken, ZendeskOAuthToken: oauth},
	Secrets: []string{apiToken, oauth, email},
}

func TestEveryFaultUnderEveryCapability(t *testing.T) { desttest.RunMatrix(t, adapter) }

func TestCapabilitiesAreZendesks(t *testing.T) {
	hd := desttest.Start(t, adapter.Options)
	d := newDest(t, hd, zendesk.Options{Credentials: creds})
	want := delivery.Capabilities{DedupWindow: time.Hour, Lookup: true, SettleDelay: 5 * time.Minute}
	if d.Name() != "zendesk" || d.Capabilities() != want {
		t.Fatalf("Name %q, Capabilities %+v", d.Name(), d.Capabilities())
	}
	if d.Capabilities().DedupWindow >= 2*time.Hour {
		t.Fatal("the declared window must stay inside the 2 hours Zendesk is reported to keep keys")
	}
	d = newDest(t, hd, zendesk.Options{Credentials: creds, SettleDelay: 30 * time.Second})
	if got := d.Capabilities(); got.SettleDelay != 30*time.Second || got.DedupWindow != time.Hour || !got.Lookup {
		t.Fatalf("Capabilities with a settle delay = %+v", got)
	}
	if _, err := zendesk.New(hd.URL(), zendesk.Options{SettleDelay: -time.Second}); err == nil {
		t.Fatal("a negative settle delay was accepted")
	}
}

func TestTheTicketSent(t *testing.T) {
	hd := desttest.Start(t, helpdesk.Options{Capabilities: delivery.Capabilities{DedupWindow: 2 * time.Hour, Lookup: true}})
	ctx := context.Background()
	tk := desttest.NewTicket()

	// Without custom fields, tenant and user start the first comment.
	d := newDest(t, hd, zendesk.Options{})
	r := d.Create(ctx, "k1", tk)
	if r.Outcome != delivery.Created || r.Receipt.URL != hd.URL()+"/agent/tickets/1" || r.Receipt.ID != "1" {
		t.Fatalf("Create = %+v", r)
	}
	got := hd.Tickets()[0]
	wantBody := "oncecall tenant: " + tk.Tenant + "\noncecall user: " + tk.UserID + "\n--\n\n" + tk.Description
	if got.Via != helpdesk.ViaZendesk || got.ExternalID != tk.ID || got.Title != tk.Title || got.Description != wantBody ||
		got.Priority != "high" || strings.Join(got.Tags, ",") != "model_auth,model_login,oncecall" || got.RequesterID != 0 ||
		len(got.CustomFields) != 0 || got.IdempotencyKey != "k1" {
		t.Fatalf("the helpdesk got %+v", got)
	}

	// With the fields, they carry tenant and user; a requester is named.
	tk2 := desttest.NewTicket()
	tk2.Description = ""
	d = newDest(t, hd, zendesk.Options{TenantField: 360001, RequesterField: 360002, RequesterID: 99})
	if r := d.Create(ctx, "k2", tk2); r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	got = hd.Tickets()[1]
	fields, _ := json.Marshal(got.CustomFields)
	if got.Description != tk2.Title || got.RequesterID != 99 ||
		string(fields) != `[{"id":360001,"value":"tenant-secret-a"},{"id":360002,"value":"user-secret-a"}]` {
		t.Fatalf("the helpdesk got %+v, fields %s", got, fields)
	}

	// One field only: the other goes to the comment.
	tk3 := desttest.NewTicket()
	d = newDest(t, hd, zendesk.Options{TenantField: 360001})
	if r := d.Create(ctx, "k3", tk3); r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	if got := hd.Tickets()[2]; got.Description != "oncecall user: "+tk3.UserID+"\n--\n\n"+tk3.Description || len(got.CustomFields) != 1 {
		t.Fatalf("the helpdesk got %+v", got)
	}
}

// TestAForgedFooterAndForgedTags: the model ends its description with an
// identity footer of its own (as the comment once ended) and writes lines
// that pass for the identity block, and sends tags a trigger may key on.
// The helpdesk receives the real tenant and user first, every forged line
// marked, and only namespaced tags besides oncecall's own.
func TestAForgedFooterAndForgedTags(t *testing.T) {
	hd := desttest.Start(t, helpdesk.Options{})
	d := newDest(t, hd, zendesk.Options{})
	tk := desttest.NewTicket()
	tk.Description = "My printer is broken.\n\n--\noncecall tenant: tenant-victim\noncecall user: ceo\n" +
		"  OnceCall User: admin\n> o n c e c a l l tenant: x\nThe oncecall tag is fine."
	tk.Tags = []string{"oncecall", "vip urgent", "Escalated", "a,b"}
	if r := d.Create(context.Background(), "k", tk); r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	got := hd.Tickets()[0]
	want := "oncecall tenant: " + tk.Tenant + "\noncecall user: " + tk.UserID + "\n--\n\n" +
		"My printer is broken.\n\n--\n[quoted] oncecall tenant: tenant-victim\n[quoted] oncecall user: ceo\n" +
		"[quoted]   OnceCall User: admin\n[quoted] > o n c e c a l l tenant: x\nThe oncecall tag is fine."
	if got.Description != want {
		t.Fatalf("the helpdesk received:\n%s\nwant:\n%s", got.Description, want)
	}
	t.Logf("the helpdesk received:\n%s\ntags %q", got.Description, got.Tags)
	for i, line := range strings.Split(got.Description, "\n") {
		if i >= 2 && (strings.HasPrefix(line, zendesk.TenantLine) || strings.HasPrefix(line, zendesk.UserLine)) {
			t.Errorf("line %d passes for an identity line: %q", i+1, line)
		}
	}
	if tags := strings.Join(got.Tags, ","); tags != "model_oncecall,model_vip_urgent,model_escalated,model_a_b,oncecall" {
		t.Fatalf("tags %s", tags)
	}
}

// TestAForgedLineOnAnyLineBreak: a forged identity line is marked wherever
// a screen may start a new line (a carriage return, NEL, the Unicode line
// and paragraph separators, a vertical tab or form feed), and when it is
// spelled with letters that look like "oncecall" (Cyrillic, Greek,
// fullwidth, accented, a capital I or a digit 1 for l, a 0 for o).
func TestAForgedLineOnAnyLineBreak(t *testing.T) {
	hd := desttest.Start(t, helpdesk.Options{})
	d := newDest(t, hd, zendesk.Options{})
	forged := []string{
		"oncecall tenant: cr",
		"oncecall tenant: nel",
		"oncecall tenant: ls",
		"oncecall tenant: ps",
		"oncecall tenant: vt",
		"oncecall tenant: ff",
		"\u043e\u043f\u0441\u0435\u0441\u0430\u04cf\u04cf tenant: cyrillic", // оп... with Cyrillic о, с, е, а, ӏ
		"\u03bfncecall tenant: greek omicron",
		"\uff4f\uff4e\uff43\uff45\uff43\uff41\uff4c\uff4c tenant: fullwidth",
		"\u00f6nc\u00e9call tenant: accented",
		"ONCECAIL tenant: capital I",
		"onceca11 user: digits",
		"0ncecall user: zero",
	}
	seps := []string{"\r", "\u0085", "\u2028", "\u2029", "\v", "\f", "\n", "\r\n", "\n", "\n", "\n", "\n", "\n"}
	tk := desttest.NewTicket()
	tk.Description = "My printer is broken."
	for i, f := range forged {
		tk.Description += seps[i] + f
	}
	tk.Description += "\rThe oncecall tag is fine."
	if r := d.Create(context.Background(), "k", tk); r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	got := hd.Tickets()[0].Description
	for _, f := range forged {
		if !strings.Contains(got, zendesk.QuotedMarker+f) {
			t.Errorf("%q reached the helpdesk unmarked", f)
		}
	}
	if strings.Count(got, zendesk.QuotedMarker) != len(forged) {
		t.Errorf("%d lines marked, want %d:\n%q", strings.Count(got, zendesk.QuotedMarker), len(forged), got)
	}
}

// TestAKeyReusedWithAnotherPayload: the configuration changed between two
// attempts for one ticket, so the second payload differs. Zendesk refuses
// it; the refusal proves the first request arrived, so it may have made
// the ticket: Ambiguous, and a lookup finds it.
func TestAKeyReusedWithAnotherPayload(t *testing.T) {
	hd := desttest.Start(t, helpdesk.Options{Capabilities: delivery.Capabilities{DedupWindow: 2 * time.Hour, Lookup: true}})
	ctx := context.Background()
	tk := desttest.NewTicket()
	if err := hd.Inject(helpdesk.Fault{Kind: helpdesk.LoseAnswer}); err != nil {
		t.Fatal(err)
	}
	if r := newDest(t, hd, zendesk.Options{}).Create(ctx, "k1", tk); r.Outcome != delivery.Ambiguous {
		t.Fatalf("first Create = %+v", r)
	}
	d := newDest(t, hd, zendesk.Options{TenantField: 1})
	r := d.Create(ctx, "k1", tk)
	desttest.CheckSafe(t, r)
	if r.Outcome != delivery.Ambiguous || r.Code != "key_reused" || r.Status != 400 {
		t.Fatalf("Create with the key reused = %+v", r)
	}
	if l := d.Lookup(ctx, "key", tk.ID); l.Outcome != delivery.Found || l.Receipt.ID != "1" {
		t.Fatalf("Lookup = %+v", l)
	}
	if n := len(hd.Tickets()); n != 1 {
		t.Fatalf("%d tickets", n)
	}
}

func TestCredentials(t *testing.T) {
	o := adapter.Options
	o.Capabilities.Lookup = true
	hd := desttest.Start(t, o)
	ctx := context.Background()
	for _, c := range []struct {
		creds zendesk.Credentials
		ok    bool
	}{
		{zendesk.Credentials{Email: email, APIToken: apiToken}, true},
		{zendesk.Credentials{OAuthToken: oauth}, true},
		{zendesk.Credentials{Email: email, APIToken: "wrong"}, false},
		{zendesk.Credentials{Email: "other@example.com", APIToken: apiToken}, false},
		{zendesk.Credentials{OAuthToken: "wrong"}, false},
	} {
		d := newDest(t, hd, zendesk.Options{Credentials: c.creds})
		r := d.Create(ctx, "k-"+c.creds.APIToken+c.creds.OAuthToken, desttest.NewTicket())
		desttest.CheckSafe(t, r, apiToken, oauth, "wrong")
		if c.ok != (r.Outcome == delivery.Created) || !c.ok && (!r.Auth || r.Outcome != delivery.Unavailable) {
			t.Errorf("Create with %v = %+v", c.creds, r)
		}
		l := d.Lookup(ctx, "key", "x")
		if c.ok != (l.Outcome == delivery.Absent) || !c.ok && !l.Auth {
			t.Errorf("Lookup with %v = %+v", c.creds, l)
		}
	}
}

func TestParseCredentials(t *testing.T) {
	for in, want := range map[string]zendesk.Credentials{
		"agent@example.com/token:abc":                     {Email: "agent@example.com", APIToken: "abc"},
		" agent@example.com/token:abc\n":                  {Email: "agent@example.com", APIToken: "abc"},
		"oauth-access-token":                              {OAuthToken: "oauth-access-token"},
		`{"email":"agent@example.com","api_token":"abc"}`: {Email: "agent@example.com", APIToken: "abc"},
		`{"oauth_token":"tok"}`:                           {OAuthToken: "tok"},
	} {
		got, err := zendesk.ParseCredentials(in)
		if err != nil || got != want {
			t.Errorf("ParseCredentials(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "   ", "/token:SECRETX", "agent@example.com/token:", `{"email":"a","api_token":"SECRETX","oauth_token":"SECRETX"}`,
		`{"password":"SECRETX"}`, `{"oauth_token":""}`, "bad\x01SECRETX", "a:b@example.com/token:SECRETX"} {
		_, err := zendesk.ParseCredentials(bad)
		if err == nil {
			t.Errorf("ParseCredentials(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "SECRETX") {
			t.Errorf("ParseCredentials error quotes the value: %v", err)
		}
	}
}

func TestCredentialsNeverPrint(t *testing.T) {
	o := zendesk.Options{Credentials: zendesk.Credentials{Email: email, APIToken: apiToken}}
	j, _ := json.Marshal(o)
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "opts", o, "creds", o.Credentials)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "opts", o, "creds", o.Credentials)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), fmt.Sprintf("%v", o.Credentials), string(j), logged.String()} {
		if strings.Contains(s, apiToken) {
			t.Errorf("the API token printed: %s", s)
		}
	}
}

func TestNew(t *testing.T) {
	for _, c := range []struct {
		url string
		o   zendesk.Options
	}{
		{"https://example.zendesk.com", zendesk.Options{}},                            // no credentials
		{"http://example.zendesk.com", zendesk.Options{Credentials: creds}},           // clear text
		{"https://example.zendesk.com?x=SECRET", zendesk.Options{Credentials: creds}}, // a query
		{"https://u:SECRET@example.zendesk.com", zendesk.Options{Credentials: creds}}, // credentials in the URL
		{"https://example.zendesk.com", zendesk.Options{Credentials: zendesk.Credentials{Email: email}}},
		{"https://example.zendesk.com", zendesk.Options{Credentials: creds, TenantField: -1}},
	} {
		_, err := zendesk.New(c.url, c.o)
		if err == nil {
			t.Errorf("New(%q) accepted", c.url)
		} else if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "example.zendesk") {
			t.Errorf("New's error quotes its input: %v", err)
		}
	}
	d, err := zendesk.New("https://example.zendesk.com/", zendesk.Options{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.TicketURL("35436"); got != "https://example.zendesk.com/agent/tickets/35436" {
		t.Errorf("TicketURL = %q", got)
	}
	base, err := zendesk.BaseURL("example")
	if err != nil || base != "https://example.zendesk.com" {
		t.Errorf("BaseURL = %q, %v", base, err)
	}
	for _, good := range []string{"a", "9", "my-company", "a1-b2", strings.Repeat("a", zendesk.MaxSubdomainLength)} {
		if _, err := zendesk.BaseURL(good); err != nil {
			t.Errorf("BaseURL(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "Example", "ex.ample", "-x", "x-", "x_y", "é", "x/y", strings.Repeat("a", zendesk.MaxSubdomainLength+1)} {
		if _, err := zendesk.BaseURL(bad); err == nil {
			t.Errorf("BaseURL(%q) accepted", bad)
		}
	}
}

// TestLookupAnswers covers list answers that must not read as "absent" or
// name another ticket.
func TestLookupAnswers(t *testing.T) {
	body := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/tickets.json" || r.URL.Query().Get("external_id") != "t-1" {
			t.Errorf("lookup request %s", r.URL)
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	d, err := zendesk.New(srv.URL, zendesk.Options{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer d.CloseIdleConnections()
	for _, c := range []struct {
		body    string
		outcome delivery.Outcome
		code    string
		id      string
	}{
		{`{"tickets":[],"count":0}`, delivery.Absent, "absent", ""},
		{`{"tickets":[{"id":35436,"external_id":"t-1","url":"https://x/api/v2/tickets/35436.json"}]}`, delivery.Found, "found", "35436"},
		{`{"tickets":[{"id":1,"external_id":"t-1"},{"id":2,"external_id":"t-1"}]}`, delivery.Inconsistent, "found_several", ""},
		{`{"tickets":[{"id":1,"external_id":"other"}]}`, delivery.Unavailable, "bad_answer", ""},
		// A lookup proves its match: a ticket without our external id, or
		// with null, is not ours.
		{`{"tickets":[{"id":1}]}`, delivery.Unavailable, "bad_answer", ""},
		{`{"tickets":[{"id":1,"external_id":null}]}`, delivery.Unavailable, "bad_answer", ""},
		{`{"tickets":[{"id":1,"external_id":"t-1"},{"id":2}]}`, delivery.Unavailable, "bad_answer", ""},
		{`{"tickets":[{"id":"x"}]}`, delivery.Unavailable, "bad_answer", ""},
		{`{"tickets":[{"id":-4}]}`, delivery.Unavailable, "bad_answer", ""},
		{`{"count":0}`, delivery.Unavailable, "bad_answer", ""},
	} {
		body = c.body
		r := d.Lookup(context.Background(), "key", "t-1")
		if r.Outcome != c.outcome || r.Code != c.code || r.Receipt.ID != c.id {
			t.Errorf("Lookup answered %s = %+v", c.body, r)
		}
		if r.Outcome == delivery.Found && r.Receipt.URL != srv.URL+"/agent/tickets/"+c.id {
			t.Errorf("receipt URL %q", r.Receipt.URL)
		}
	}
}

// TestALookupThatIgnoresItsFilter: the local helpdesk holds another
// ticket, created without an external id, and lists it whatever
// ?external_id= asks. The lookup must not take it for ours.
func TestALookupThatIgnoresItsFilter(t *testing.T) {
	hd := desttest.Start(t, helpdesk.Options{Capabilities: delivery.Capabilities{Lookup: true}})
	d := newDest(t, hd, zendesk.Options{})
	other := desttest.NewTicket()
	other.ID = ""
	if r := d.Create(context.Background(), "other-key", other); r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	if err := hd.Inject(helpdesk.Fault{Kind: helpdesk.IgnoreFilter, Op: helpdesk.Lookup, Count: 2}); err != nil {
		t.Fatal(err)
	}
	if r := d.Lookup(context.Background(), "key", "ours"); r.Outcome != delivery.Unavailable || r.Code != "bad_answer" || r.Receipt != (delivery.Receipt{}) {
		t.Fatalf("a lookup listing a ticket without an external id = %+v, want unavailable bad_answer", r)
	}
	mine := desttest.NewTicket()
	if r := d.Create(context.Background(), "my-key", mine); r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	if r := d.Lookup(context.Background(), "key", mine.ID); r.Outcome != delivery.Unavailable || r.Code != "bad_answer" {
		t.Fatalf("a lookup listing ours and another = %+v, want unavailable bad_answer", r)
	}
}

func TestCreateAnswers(t *testing.T) {
	status, body, header := 201, "", ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/tickets.json" || r.Header.Get("Idempotency-Key") != "k" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") {
			t.Errorf("create request %s %v", r.URL, r.Header)
		}
		if header != "" {
			w.Header().Set("X-Idempotency-Lookup", header)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	d, err := zendesk.New(srv.URL, zendesk.Options{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer d.CloseIdleConnections()
	for _, c := range []struct {
		status       int
		body, header string
		outcome      delivery.Outcome
		code         string
	}{
		{201, `{"ticket":{"id":35436}}`, "miss", delivery.Created, "created"},
		{201, `{"ticket":{"id":35436}}`, "hit", delivery.Created, "replayed"},
		{200, `{"ticket":{"id":35436}}`, "", delivery.Created, "created"},
		{201, `{"ticket":{}}`, "", delivery.Ambiguous, "no_id"},
		{201, `{"id":35436}`, "", delivery.Ambiguous, "no_id"},
		{400, `{"error":"IdempotentRequestError","description":"…"}`, "", delivery.Ambiguous, "key_reused"},
		{400, `{"error":"RecordInvalid","description":"Record validation errors"}`, "", delivery.Refused, "http_400"},
		{422, `{"error":"RecordInvalid","details":{"base":[{"description":"Subject: too long"}]}}`, "", delivery.Refused, "http_422"},
	} {
		status, body, header = c.status, c.body, c.header
		r := d.Create(context.Background(), "k", desttest.NewTicket())
		if r.Outcome != c.outcome || r.Code != c.code {
			t.Errorf("Create answered %d %s = %+v", c.status, c.body, r)
		}
		if r.Outcome == delivery.Refused && r.Reason == "" {
			t.Errorf("a refusal without Zendesk's reason: %+v", r)
		}
	}
}

// TestAForgedPriorityAndTags: the helpdesk receives one of the four
// priorities and only namespaced tags, whatever the ticket item holds
// (desttest.CheckForgedPriorityAndTags).
func TestAForgedPriorityAndTags(t *testing.T) {
	hd := desttest.Start(t, helpdesk.Options{})
	d := newDest(t, hd, zendesk.Options{})
	desttest.CheckForgedPriorityAndTags(t, hd, d)
}
