package outcome_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/outcome"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

const key = "outcome-test-key-0123456789"

type rig struct {
	srv   *httptest.Server
	nonce string
	proxy *dynamotest.Proxy
	env   *dynamotest.Env
}

// newRig serves the callback and the outcome read as the local server
// does, over one store behind the fault proxy.
func newRig(t *testing.T) *rig {
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	store := dynamo.New(dynamotest.NewClient(t, proxy.URL, env.Requests), env.Table)
	if _, err := localdb.SeedDemo(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(callback.NewHandler(v, store, nil), httpapi.Options{Outcome: &outcome.Handler{Reader: outcome.Reader{Store: store}, Key: key}})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{srv: srv, nonce: n, proxy: proxy, env: env}
}

func (r *rig) create(t *testing.T, user, rid, title string) (int, string) {
	t.Helper()
	body := `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"` + title + `"}},` +
		`"context":{"externalUserId":"` + user + `","metadata":{"request_id":"` + rid + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/callback", strings.NewReader(body))
	req.Header.Set("X-Request-Nonce", r.nonce)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (r *rig) read(t *testing.T, auth, query string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+outcome.Path+"?"+query, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (r *rig) outcome(t *testing.T, user, rid string) outcome.View {
	t.Helper()
	status, body := r.read(t, "Bearer "+key, url.Values{"user": {user}, "request_id": {rid}}.Encode())
	var v outcome.View
	if status != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("outcome read: %d %s", status, body)
	}
	return v
}

// TestLostAnswerTryAgain: the ticket is created and its answer lost on
// the way back; the application reads the outcome, learns the ticket, and
// the user's "try again" under the same id creates nothing more.
func TestLostAnswerTryAgain(t *testing.T) {
	r := newRig(t)
	if v := r.outcome(t, "user-a", "app-1"); v.Status != outcome.StatusNone {
		t.Fatalf("before any call: %+v, want none", v)
	}
	// oncecall creates the ticket; its answer is lost between oncecall
	// and the application (AIVAX's model saw a tool error, or the
	// inference timed out): the application never reads it.
	_, _ = r.create(t, "user-a", "app-1", "VPN drops")
	v := r.outcome(t, "user-a", "app-1")
	if v.Status != outcome.StatusFound || v.Function != "create_ticket" || v.TicketID == "" || v.CreatedAt == "" ||
		!strings.Contains(string(v.Result), `"ticket_id":"`+v.TicketID+`"`) {
		t.Fatalf("after the lost answer: %+v", v)
	}
	status, body := r.create(t, "user-a", "app-1", "VPN drops")
	if status != http.StatusOK || !strings.Contains(body, `"ticket_id":"`+v.TicketID+`"`) || !strings.Contains(body, `"deduplicated":true`) {
		t.Fatalf("try again: %d %s", status, body)
	}
	if n := r.env.Count(t, "ticket"); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
}

// TestAnotherUsersIDDisclosesNothing: an id another user of the tenant
// holds reads as none, exactly as an id nobody sent.
func TestAnotherUsersIDDisclosesNothing(t *testing.T) {
	r := newRig(t)
	if status, body := r.create(t, "user-a", "shared-1", "Printer"); status != http.StatusOK || !strings.Contains(body, `"created"`) {
		t.Fatalf("create: %d %s", status, body)
	}
	_, held := r.read(t, "Bearer "+key, "user=user-b&request_id=shared-1")
	_, never := r.read(t, "Bearer "+key, "user=user-b&request_id=never-sent")
	if held != strings.Replace(never, "never-sent", "shared-1", 1) || !strings.Contains(held, `"status":"none"`) {
		t.Fatalf("another user's id: %s; an unknown id: %s", held, never)
	}
}

// TestCredentialAndQueryAreChecked: the outcome key, never the hook key;
// the two parameters, each once, checked as the doors check them.
func TestCredentialAndQueryAreChecked(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct {
		auth, query string
		status      int
		says        string
	}{
		{"", "user=user-a&request_id=x", 401, "missing_outcome_key"},
		{"Bearer " + localdb.DemoHookKey, "user=user-a&request_id=x", 403, "invalid_outcome_key"},
		{"Basic " + key, "user=user-a&request_id=x", 403, "invalid_outcome_key"},
		{"Bearer " + key, "user=user-a", 400, "request_id must be given once"},
		{"Bearer " + key, "user=user-a&request_id=x&request_id=y", 400, "request_id must be given once"},
		{"Bearer " + key, "user=user-a&request_id=a%20b", 400, "visible ASCII"},
		{"Bearer " + key, "user=user-a&request_id=x&tenant_id=t", 400, "unknown query parameter"},
		{"Bearer " + key, "user=user-a&request_id=x", 200, `"status":"none"`},
	} {
		status, body := r.read(t, c.auth, c.query)
		if status != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%q %q = %d %s, want %d %q", c.auth, c.query, status, body, c.status, c.says)
		}
	}
	res, err := http.Post(r.srv.URL+outcome.Path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", res.StatusCode)
	}
}

// TestDeliveryIsReadWithTheRecord: a found ticket's delivery is shown as
// get_ticket shows it, read from the same item as the operation's record:
// one GetItem, with a destination or without (once the id key is known).
func TestDeliveryIsReadWithTheRecord(t *testing.T) {
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	ctx := context.Background()
	now := time.Now().UTC()
	for _, c := range []struct {
		request string
		dest    bool
	}{{"r-dest", true}, {"r-none", false}} {
		id, err := store.FirstTicketID(ctx, "user-a", c.request)
		if err != nil {
			t.Fatal(err)
		}
		rec := idempotency.Record{Key: strings.Repeat(c.request[2:3], 64), UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
			State: idempotency.Completed, Fingerprint: "fp", TicketID: id, Result: ticket.Created(id), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "t", Priority: "normal", CreatedAt: now,
			OperationKey: rec.Key, RequestID: c.request}
		var out *delivery.Record
		if c.dest {
			out = &delivery.Record{State: delivery.Queued, Destination: "webhook", Key: delivery.Key(rec.Key, tk.ID), Since: now, NextAt: now, Version: 1}
		}
		if _, _, err := store.Create(ctx, rec, tk, out); err != nil {
			t.Fatal(err)
		}
		env.Requests.Reset()
		v, err := outcome.Reader{Store: store}.Read(ctx, "user-a", c.request)
		if err != nil || v.Status != outcome.StatusFound || v.TicketID != id || (v.Delivery != nil) != c.dest || (c.dest && v.Delivery.State != delivery.Queued) {
			t.Fatalf("%s: %+v %v", c.request, v, err)
		}
		if ops := env.Requests.Operations(); ops["GetItem"] != 1 || len(ops) != 1 {
			t.Errorf("%s: the read took %v, want one GetItem", c.request, ops)
		}
	}
}
