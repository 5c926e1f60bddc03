package callback_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

const signIn = `{"title":"Cannot sign in"}`

func TestCreateThenDeduplicate(t *testing.T) {
	r := newRig(t)
	first := r.call(create("user-a", "request-example", signIn))
	if first.status != 200 || first.str("status") != "created" || first.body["deduplicated"] != false || first.str("ticket_id") == "" {
		t.Fatalf("first call: %d %s", first.status, first.raw)
	}
	second := r.call(create("user-a", "request-example", signIn))
	if second.status != 200 || second.str("status") != "created" || second.body["deduplicated"] != true {
		t.Fatalf("second call: %d %s", second.status, second.raw)
	}
	if second.str("ticket_id") != first.str("ticket_id") {
		t.Fatalf("second call names ticket %s, first created %s", second.str("ticket_id"), first.str("ticket_id"))
	}
	if strings.Replace(second.raw, `"deduplicated":true`, `"deduplicated":false`, 1) != first.raw {
		t.Errorf("replay differs from the first answer beyond the flag:\n%s\n%s", first.raw, second.raw)
	}
	if n := r.tickets(); n != 1 {
		t.Fatalf("%d ticket items, want 1", n)
	}
	tk, err := r.store.Ticket(context.Background(), first.str("ticket_id"))
	if err != nil || tk == nil || tk.Title != "Cannot sign in" || tk.Tenant != "tenant-a" || tk.UserID != "user-a" || tk.Priority != "normal" || tk.RequestID != "request-example" {
		t.Fatalf("stored ticket %+v, %v", tk, err)
	}
}

// TestKeyOrderDoesNotMatterButValuesDo: neither the order of members nor
// the order of tags (a set) changes the operation; a changed value does.
// (Tags are a set: their order is normalized away before the key is made.)
func TestKeyOrderDoesNotMatterButValuesDo(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", `{"title":"Printer jam","priority":"high","tags":["hw","floor-2"]}`))
	for _, same := range []string{
		`{"tags":["hw","floor-2"],"priority":"high","title":"Printer jam"}`,
		`{"title":"Printer jam","priority":"high","tags":["floor-2","hw"]}`,
	} {
		b := r.call(create("user-a", "r-1", same))
		if a.str("status") != "created" || b.body["deduplicated"] != true || a.str("ticket_id") != b.str("ticket_id") {
			t.Fatalf("reordered members or tags made a new operation:\n%s\n%s", a.raw, b.raw)
		}
	}
	for _, changed := range []string{
		`{"title":"Printer jam","priority":"urgent","tags":["hw","floor-2"]}`,
		`{"title":"Printer  jam","priority":"high","tags":["hw","floor-2"]}`,
		`{"title":"Printer jam","priority":"high"}`,
	} {
		c := r.call(create("user-a", "r-1", changed))
		if c.str("status") != "created" || c.body["deduplicated"] != false || c.str("ticket_id") == a.str("ticket_id") {
			t.Errorf("changed arguments %s were deduplicated: %s", changed, c.raw)
		}
	}
	if n := r.tickets(); n != 4 {
		t.Errorf("%d tickets, want 4", n)
	}
}

func TestRequestIDSeparatesOperations(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", signIn))
	b := r.call(create("user-a", "r-2", signIn))
	if a.str("ticket_id") == b.str("ticket_id") || b.body["deduplicated"] != false {
		t.Fatalf("a new request_id was deduplicated: %s", b.raw)
	}
}

func TestTenantIsolation(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "shared-id", signIn))
	// carol is in tenant-b: the same request_id and arguments are her own operation.
	c := r.call(create("user-c", "shared-id", signIn))
	if c.status != 200 || c.str("status") != "created" || c.body["deduplicated"] != false || c.str("ticket_id") == a.str("ticket_id") {
		t.Fatalf("tenant-b call: %d %s", c.status, c.raw)
	}
	// A client-chosen metadata.tenant_id changes nothing.
	body := strings.Replace(create("user-c", "shared-id", signIn), `"request_id"`, `"tenant_id":"tenant-a","request_id"`, 1)
	c2 := r.call(body)
	if c2.str("ticket_id") != c.str("ticket_id") || c2.body["deduplicated"] != true {
		t.Fatalf("metadata.tenant_id moved the call: %s", c2.raw)
	}
	// get_ticket across tenants: indistinguishable from a missing ticket.
	other := r.call(callBody("user-c", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`))
	missingID := ticket.NewID()
	missing := r.call(callBody("user-c", "", "get_ticket", `{"ticket_id":"`+missingID+`"}`))
	if other.status != 200 || other.str("status") != "not_found" || other.code() != missing.code() ||
		strings.ReplaceAll(other.raw, a.str("ticket_id"), "X") != strings.ReplaceAll(missing.raw, missingID, "X") {
		t.Fatalf("another tenant's ticket is distinguishable:\n%s\n%s", other.raw, missing.raw)
	}
	if strings.Contains(other.raw, "Cannot sign in") {
		t.Fatal("another tenant's ticket leaked")
	}
}

func TestRequestIDConflict(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", signIn))
	// bob, same tenant, same request_id and arguments: the key is alice's.
	b := r.call(create("user-b", "r-1", signIn))
	if b.status != http.StatusForbidden || b.code() != "request_id_conflict" {
		t.Fatalf("conflict: %d %s", b.status, b.raw)
	}
	if strings.Contains(b.raw, a.str("ticket_id")) {
		t.Fatal("the conflict disclosed alice's ticket")
	}
	if n := r.tickets(); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

func TestAuthentication(t *testing.T) {
	r := newRig(t)
	wrong, err := nonce.Generate("not-the-hook-key", testCost)
	if err != nil {
		t.Fatal(err)
	}
	overCost := "$2b$31$" + strings.Repeat("A", 53)
	body := create("user-a", "r-1", signIn)
	cases := []struct {
		name, nonce string
		status      int
		code        string
	}{
		{"missing", "", 401, "missing_nonce"},
		{"wrong key", wrong, 403, "invalid_nonce"},
		{"over cost", overCost, 403, "invalid_nonce"},
		{"malformed", "local-demo-hook-key-0123456789", 403, "invalid_nonce"},
		{"truncated", validNonce(t)[:59], 403, "invalid_nonce"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := r.post(c.nonce, body)
			if p.status != c.status || p.code() != c.code {
				t.Fatalf("%d %s, want %d %s", p.status, p.raw, c.status, c.code)
			}
		})
	}
	if r.tickets() != 0 || r.operations() != 0 {
		t.Fatal("an unauthenticated call wrote something")
	}
	// A repeat of an existing operation is not disclosed without a valid nonce.
	ok := r.call(body)
	p := r.post(wrong, body)
	if p.status != 403 || strings.Contains(p.raw, ok.str("ticket_id")) {
		t.Fatalf("replay disclosed to a wrong nonce: %s", p.raw)
	}
	logs := r.logs.String()
	for _, secret := range []string{validNonce(t), wrong, localdb.DemoHookKey, "Cannot sign in"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("logs contain a secret or payload %q", secret)
		}
	}
}

func TestIdentityAndAuthorization(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"missing externalUserId", create("", "r-1", signIn), 200, "missing_user"},
		{"unknown user", create("mallory", "r-1", signIn), 403, "unknown_user"},
		{"disabled user", create("user-d", "r-1", signIn), 403, "user_disabled"},
		{"function not granted", create("user-e", "r-1", signIn), 403, "function_not_granted"},
		{"missing request_id", create("user-a", "", signIn), 200, "missing_request_id"},
		{"request_id with spaces", create("user-a", "a b", signIn), 200, "invalid_request_id"},
		{"unknown function", callBody("user-a", "r-1", "delete_everything", `{}`), 200, "unknown_function"},
		{"invalid arguments", create("user-a", "r-1", `{"title":"","priority":"asap","color":"red"}`), 200, "invalid_arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := r.call(c.body)
			if p.status != c.status || p.code() != c.code {
				t.Fatalf("%d %s, want %d %s", p.status, p.raw, c.status, c.code)
			}
			if c.status == 200 && (p.str("status") != "rejected" || p.message() == "") {
				t.Fatalf("a correctable error must be a rejected body with a message: %s", p.raw)
			}
		})
	}
	if r.tickets() != 0 || r.operations() != 0 {
		t.Fatal("a refused call wrote something")
	}
}

func TestRejectionsSayWhatToFix(t *testing.T) {
	r := newRig(t)
	p := r.call(create("user-a", "r-1", `{"title":"","priority":"asap","color":"red","tags":["a","a"]}`))
	for _, want := range []string{"title is empty", `priority "asap" is not one of "low", "normal", "high", "urgent"`, `tags[1] repeats "a"`, `"color" is not accepted`} {
		if !strings.Contains(p.message(), want) {
			t.Errorf("message %q does not say %q", p.message(), want)
		}
	}
	u := r.call(callBody("user-a", "r-1", "delete_everything", `{}`))
	if !strings.Contains(u.message(), "create_ticket, get_ticket") {
		t.Errorf("unknown function message does not name the functions: %s", u.message())
	}
}

// TestLongStringIsTooLarge sends, over HTTP, a description of 40,000
// characters, past the limit on any string in a body: the answer is the
// table's too_large, 200 and rejected, naming the limit and the argument to
// shorten, and nothing is written.
func TestLongStringIsTooLarge(t *testing.T) {
	r := newRig(t)
	p := r.call(create("user-a", "r-1", `{"title":"Cannot sign in","description":"`+strings.Repeat("d", 40_000)+`"}`))
	if p.status != 200 || p.str("status") != "rejected" || p.code() != protocol.CodeTooLarge {
		t.Fatalf("40,000-character description: %d %s", p.status, p.raw[:min(len(p.raw), 300)])
	}
	for _, want := range []string{"function.content.description", "longer than 32768 bytes", "Shorten it"} {
		if !strings.Contains(p.message(), want) {
			t.Errorf("message %q does not say %q", p.message(), want)
		}
	}
	if r.tickets() != 0 || r.operations() != 0 {
		t.Fatal("a refused call wrote something")
	}
}

func TestRequestPolicy(t *testing.T) {
	r := newRig(t)
	r.h.Policies = idempotency.Policies{ticket.CreateName: idempotency.PolicyRequest}
	a := r.call(create("user-a", "approved-1", signIn))
	same := r.call(create("user-a", "approved-1", signIn))
	if same.body["deduplicated"] != true || same.str("ticket_id") != a.str("ticket_id") {
		t.Fatalf("same arguments: %s", same.raw)
	}
	changed := r.call(create("user-a", "approved-1", `{"title":"Cannot sign in!"}`))
	if changed.status != 200 || changed.code() != "request_id_reused" || !strings.Contains(changed.message(), a.str("ticket_id")) {
		t.Fatalf("changed arguments under the request policy: %s", changed.raw)
	}
	if n := r.tickets(); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

func TestGetTicket(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", `{"title":"VPN drops","description":"Every hour.\nSince Monday.","tags":["net"]}`))
	r.env.Requests.Reset()
	got := r.call(callBody("user-b", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`))
	tk, _ := got.body["ticket"].(map[string]any)
	if got.status != 200 || got.str("status") != "found" || tk["title"] != "VPN drops" || tk["description"] != "Every hour.\nSince Monday." {
		t.Fatalf("get_ticket by a tenant colleague: %s", got.raw)
	}
	// The caller's record, the ticket, and its maker's record, which must
	// still vouch for it (identity.User.Vouches).
	if n := r.env.Requests.Load(); n > 3 {
		t.Errorf("get_ticket by a colleague took %d store requests, want 3", n)
	}
	r.env.Requests.Reset()
	if own := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`)); own.str("status") != "found" {
		t.Fatalf("get_ticket by its maker: %s", own.raw)
	}
	if n := r.env.Requests.Load(); n > 2 {
		t.Errorf("get_ticket by its maker took %d store requests, want 2 (its record is the call's own)", n)
	}
	bad := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"../../etc"}`))
	if bad.code() != "invalid_arguments" {
		t.Fatalf("malformed id: %s", bad.raw)
	}
	// A message ends its sentence once, whatever the schema's description
	// ends with.
	for _, args := range []string{`{}`, `{"ticket_id":""}`, `{"ticket_id":"../../etc"}`} {
		m := r.call(callBody("user-a", "", "get_ticket", args)).message()
		if !strings.HasSuffix(m, ".") || strings.HasSuffix(m, "..") {
			t.Errorf("get_ticket %s: message %q does not end with one period", args, m)
		}
	}
}

func TestFunctionsListing(t *testing.T) {
	r := newRig(t)
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/functions", nil)
	if p := r.do(req); p.status != 401 {
		t.Fatalf("unauthenticated listing: %d", p.status)
	}
	req.Header.Set("X-Request-Nonce", validNonce(t))
	p := r.do(req)
	fns, _ := p.body["functions"].([]any)
	if p.status != 200 || len(fns) != 2 {
		t.Fatalf("listing: %s", p.raw)
	}
	first := fns[0].(map[string]any)
	schema := first["contentFormat"].(map[string]any)
	if first["name"] != "create_ticket" || first["callbackUrl"] != r.srv.URL+"/callback" || schema["additionalProperties"] != false {
		t.Fatalf("create_ticket listing: %v", first)
	}
	if req, ok := schema["required"].([]any); !ok || len(req) != 1 || req[0] != "title" {
		t.Fatalf("required = %v", schema["required"])
	}
}

// TestConcurrentIdenticalCalls releases ten identical calls at once: one
// creates the ticket, nine are answered with it. DynamoDB may cancel
// concurrent transactions on one item (TransactionConflict), which
// oncecall answers busy once its own retries are spent; a busy call is
// sent again, as the application would, with loadtest's budget (the local
// store serializes everything and never answers busy; the conflict rule's
// own test is TestSeedBurstUnderTheConflictRule).
func TestConcurrentIdenticalCalls(t *testing.T) {
	r := newRig(t)
	const n = 10
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for retry := range loadtest.BusyRetries + 1 {
				if replies[i] = r.call(create("user-a", "r-concurrent", signIn)); replies[i].str("status") != "busy" {
					return
				}
				time.Sleep(min(loadtest.BusyBackoff<<retry, loadtest.MaxBusyBackoff))
			}
		})
	}
	wg.Wait()
	created, dedup := 0, 0
	for _, p := range replies {
		if p.status != 200 || p.str("ticket_id") != replies[0].str("ticket_id") {
			t.Fatalf("answers differ: %s vs %s", p.raw, replies[0].raw)
		}
		switch p.body["deduplicated"] {
		case false:
			created++
		case true:
			dedup++
		}
	}
	if created != 1 || dedup != n-1 {
		t.Fatalf("%d created, %d deduplicated; want 1 and %d", created, dedup, n-1)
	}
	if got := r.tickets(); got != 1 {
		t.Fatalf("%d ticket items, want 1", got)
	}
}

func TestPendingAnswersInProgress(t *testing.T) {
	r := newRig(t)
	key := opKey(t, idempotency.PolicyArguments, "tenant-a", "r-1", signIn)
	err := r.store.PutOperation(context.Background(), idempotency.Record{Key: key.ID, UserID: "user-a", Tenant: "tenant-a",
		Function: ticket.CreateName, State: idempotency.Pending, Fingerprint: key.Fingerprint, CreatedAt: r.clock(), ExpiresAt: r.clock().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p := r.call(create("user-a", "r-1", signIn))
		if p.status != 200 || p.str("status") != "in_progress" || p.body["retryable"] != true {
			t.Fatalf("pending: %s", p.raw)
		}
	}
	if n := r.tickets(); n != 0 {
		t.Fatalf("a pending operation was re-executed: %d tickets", n)
	}
}

func TestRetentionWindowIsExact(t *testing.T) {
	r := newRig(t)
	r.h.Retention = time.Hour
	a := r.call(create("user-a", "r-1", signIn))
	r.advance(time.Hour)
	b := r.call(create("user-a", "r-1", signIn))
	if b.body["deduplicated"] != true || b.str("ticket_id") != a.str("ticket_id") {
		t.Fatalf("inside the window: %s", b.raw)
	}
	r.advance(time.Second)
	c := r.call(create("user-a", "r-1", signIn))
	if c.body["deduplicated"] != false || c.str("ticket_id") == a.str("ticket_id") {
		t.Fatalf("after the window: %s", c.raw)
	}
	if n := r.tickets(); n != 2 {
		t.Errorf("%d tickets, want 2", n)
	}
}

// TestDisabledUserIsRefusedAtOnce disables a user after its calls ran on
// this handler and checks that neither a write nor a read goes through.
func TestDisabledUserIsRefusedAtOnce(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", signIn))
	u := localdb.DemoUsers[0]
	u.Active = false
	if err := r.store.PutUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	w := r.call(create("user-a", "r-2", signIn))
	if w.status != 403 || w.code() != "user_disabled" {
		t.Fatalf("write by a disabled user: %d %s", w.status, w.raw)
	}
	d := r.call(create("user-a", "r-1", signIn))
	if d.status != 403 || strings.Contains(d.raw, a.str("ticket_id")) {
		t.Fatalf("replay to a disabled user: %d %s", d.status, d.raw)
	}
	g := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`))
	if g.status != 403 || strings.Contains(g.raw, "Cannot sign in") {
		t.Fatalf("read by a disabled user: %d %s", g.status, g.raw)
	}
	if n := r.tickets(); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

func TestBusy(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy), withTimeout(busyTimeout))
	proxy.Inject("TransactWriteItems", repeatFault(dynamotest.Fault{Error: "TransactionCanceledException", Reasons: []string{"TransactionConflict", "None"}}, 10000)...)
	p := r.call(create("user-a", "r-1", signIn))
	if p.status != 200 || p.str("status") != "busy" || p.body["retryable"] != true {
		t.Fatalf("busy: %d %s", p.status, p.raw)
	}
	proxy.Clear("TransactWriteItems")
	if r.tickets() != 0 {
		t.Fatal("busy wrote a ticket")
	}
	again := r.call(create("user-a", "r-1", signIn))
	if again.str("status") != "created" || r.tickets() != 1 {
		t.Fatalf("retry after busy: %s", again.raw)
	}
}

func TestStoreFailureIs500AndWritesNothing(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	proxy.Inject("TransactWriteItems", dynamotest.Fault{Error: "ValidationException"})
	p := r.call(create("user-a", "r-1", signIn))
	if p.status != 500 || p.str("status") != "error" {
		t.Fatalf("store failure: %d %s", p.status, p.raw)
	}
	if r.tickets() != 0 || r.operations() != 0 {
		t.Fatal("a failed call wrote something")
	}
	if !strings.Contains(r.logs.String(), `"level":"ERROR"`) {
		t.Error("a 500 was not logged as an error")
	}
}

// TestGrantsTakeEffectAtOnce: every call reads its user's record as it is,
// so re-enabling a user or granting a function works on the next call.
func TestGrantsTakeEffectAtOnce(t *testing.T) {
	r := newRig(t)
	if p := r.call(create("user-e", "r-1", signIn)); p.code() != "function_not_granted" {
		t.Fatalf("before the grant: %s", p.raw)
	}
	if p := r.call(create("user-d", "r-1", signIn)); p.code() != "user_disabled" {
		t.Fatalf("before enabling: %s", p.raw)
	}
	for _, u := range localdb.DemoUsers {
		if u.ExternalID == "user-d" || u.ExternalID == "user-e" {
			u.Active, u.Functions = true, []string{ticket.CreateName, ticket.GetName}
			if err := r.store.PutUser(context.Background(), u); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"user-e", "user-d"} {
		if p := r.call(create(id, "r-after-"+id, signIn)); p.str("status") != "created" {
			t.Errorf("%s after the grant: %s", id, p.raw)
		}
	}
}
