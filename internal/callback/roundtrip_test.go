package callback_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// ops is a count of store requests per operation, as the SDK sent them.
type ops map[string]int64

func (o ops) String() string {
	var b strings.Builder
	for _, k := range []string{"GetItem", "TransactWriteItems", "TransactGetItems", "PutItem", "Scan"} {
		if o[k] != 0 {
			b.WriteString(k + "=" + strconv.FormatInt(o[k], 10) + " ")
		}
	}
	return strings.TrimSpace(b.String())
}

// measure resets the request counter, runs f and returns what f sent.
func (r *rig) measure(f func()) ops {
	r.env.Requests.Reset()
	f()
	return ops(r.env.Requests.Operations())
}

func kind(p reply) string {
	switch {
	case p.body["deduplicated"] == true:
		return "deduplicated"
	case p.code() != "":
		return p.code()
	default:
		return p.str("status")
	}
}

// consistentReads checks that every GetItem the proxy has seen asked for a
// strongly consistent read: a user read that could return a record older
// than the last change would let a revoked user through.
func consistentReads(t *testing.T, proxy *dynamotest.Proxy) {
	t.Helper()
	if seen, consistent := proxy.Seen("GetItem"), proxy.ConsistentReads("GetItem"); seen == 0 || consistent != seen {
		t.Errorf("%d of %d GetItem requests asked for a consistent read", consistent, seen)
	}
}

// TestEveryCallIsTwoRequests counts, with an SDK middleware, the store
// requests of each kind of call on a store that returns the old item with
// a cancellation, as DynamoDB does: the user's record, read with a
// consistent GetItem, and then one request of the kind named. The same
// user's first call and later ones cost the same: nothing is cached.
func TestEveryCallIsTwoRequests(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	first := r.call(create("user-a", "r-1", signIn))
	pending := opKey(t, idempotency.PolicyArguments, "tenant-a", "r-pending", signIn)
	err := r.store.PutOperation(context.Background(), idempotency.Record{Key: pending.ID, UserID: "user-a", Tenant: "tenant-a",
		Function: ticket.CreateName, State: idempotency.Pending, Fingerprint: pending.Fingerprint, CreatedAt: r.clock(), ExpiresAt: r.clock().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	write := ops{"GetItem": 1, "TransactWriteItems": 1}
	read := ops{"GetItem": 2}
	steps := []struct {
		name, body, kind string
		want             ops
	}{
		{"created, bob's first call", create("user-b", "r-b", signIn), "created", write},
		{"created", create("user-a", "r-2", signIn), "created", write},
		{"deduplicated", create("user-a", "r-1", signIn), "deduplicated", write},
		{"in_progress", create("user-a", "r-pending", signIn), "in_progress", write},
		{"request_id_conflict", create("user-b", "r-1", signIn), "request_id_conflict", write},
		{"get_ticket found", callBody("user-a", "", "get_ticket", `{"ticket_id":"`+first.str("ticket_id")+`"}`), "found", read},
		{"get_ticket not found", callBody("user-a", "", "get_ticket", `{"ticket_id":"`+ticket.NewID()+`"}`), "ticket_not_found", read},
	}
	for _, s := range steps {
		var p reply
		got := r.measure(func() { p = r.call(s.body) })
		if kind(p) != s.kind {
			t.Fatalf("%s: got %s: %s", s.name, kind(p), p.raw)
		}
		if !maps.Equal(got, s.want) {
			t.Errorf("%s took %v, want %v", s.name, got, s.want)
		}
	}
	consistentReads(t, proxy)
}

// TestReusedRequestIDIsTwoRequests covers the request policy's replay
// with other arguments.
func TestReusedRequestIDIsTwoRequests(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	r.h.Policies = idempotency.Policies{ticket.CreateName: idempotency.PolicyRequest}
	r.call(create("user-a", "approved-1", signIn))
	var p reply
	got := r.measure(func() { p = r.call(create("user-a", "approved-1", `{"title":"Another title"}`)) })
	if kind(p) != "request_id_reused" {
		t.Fatalf("got %s", p.raw)
	}
	if want := (ops{"GetItem": 1, "TransactWriteItems": 1}); !maps.Equal(got, want) {
		t.Errorf("reused request_id took %v, want %v", got, want)
	}
}

// TestRefusalsTakeTheOneRead: a call refused for its user, its function or
// its arguments sends the user read and nothing else; a call without a
// user, or whose nonce fails before BCrypt, sends nothing.
func TestRefusalsTakeTheOneRead(t *testing.T) {
	r := newRig(t)
	step := func(name, nonceHeader, body, wantKind string, want ops) {
		t.Helper()
		var p reply
		got := r.measure(func() { p = r.post(nonceHeader, body) })
		if kind(p) != wantKind {
			t.Errorf("%s: %d %s, want %s", name, p.status, p.raw, wantKind)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s took %v, want %v", name, got, want)
		}
	}
	good := validNonce(t)
	one := ops{"GetItem": 1}
	step("unknown user", good, create("nobody", "r-1", signIn), "unknown_user", one)
	step("disabled user", good, create("user-d", "r-1", signIn), "user_disabled", one)
	step("function not granted", good, create("user-e", "r-1", signIn), "function_not_granted", one)
	step("unknown function", good, callBody("user-a", "r-1", "close_ticket", `{}`), "unknown_function", one)
	step("invalid arguments", good, create("user-a", "r-1", `{"title":""}`), protocol.CodeInvalidArguments, one)
	step("no user", good, create("", "r-1", signIn), "missing_user", ops{})
	step("no nonce", "", create("user-a", "r-1", signIn), "missing_nonce", ops{})
	step("nonce over the cost", "$2b$31$"+good[7:], create("user-a", "r-1", signIn), "invalid_nonce", ops{})
	step("nonce not a hash", "not-a-bcrypt-hash", create("user-a", "r-1", signIn), "invalid_nonce", ops{})
}

// TestABadNonceIsAnsweredAsIfTheBodyWereNeverRead: the body is decoded,
// and its user's record read, while the nonce's BCrypt work runs; a nonce
// that fails gets the one answer it always got, whatever the body names
// or holds (an active user, a disabled one, an unknown one, no user, a
// broken envelope, not JSON), and nothing is written.
func TestABadNonceIsAnsweredAsIfTheBodyWereNeverRead(t *testing.T) {
	r := newRig(t)
	wrong, err := nonce.Generate("not-the-hook-key-0123456789abcdef", nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{
		"an active user":    create("user-a", "r-1", signIn),
		"a disabled user":   create("user-d", "r-1", signIn),
		"an unknown user":   create("nobody", "r-1", signIn),
		"no user":           create("", "r-1", signIn),
		"a broken envelope": `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"x"}},"context":[]}`,
		"not JSON":          `{"type":`,
	}
	for _, n := range []struct{ name, header string }{{"a wrong key's nonce", wrong}, {"no nonce", ""}, {"a nonce over the cost", "$2b$31$" + wrong[7:]}} {
		var answers []string
		for _, name := range []string{"an active user", "a disabled user", "an unknown user", "no user", "a broken envelope", "not JSON"} {
			p := r.post(n.header, bodies[name])
			answers = append(answers, strconv.Itoa(p.status)+" "+p.raw)
			if p.status != 401 && p.status != 403 {
				t.Errorf("%s, %s: %d %s, want 401 or 403", n.name, name, p.status, p.raw)
			}
		}
		for i, a := range answers[1:] {
			if a != answers[0] {
				t.Errorf("%s: body %d answered %s, body 0 %s", n.name, i+1, a, answers[0])
			}
		}
	}
	if r.tickets() != 0 || r.operations() != 0 {
		t.Error("a refused call wrote something")
	}
}

// TestEveryCallReadsTheRecordAsItIsNow changes a user's record after its
// calls ran, behind the container's back: the very next write, replay and
// read see the change, refused in the user read, the only request they
// make, and nothing is written or disclosed.
func TestEveryCallReadsTheRecordAsItIsNow(t *testing.T) {
	cases := []struct {
		name   string
		change func(*identity.User)
		// write: code of a new create_ticket, and of a replay of the
		// user's completed operation; read: code of get_ticket of the
		// ticket it created ("" for found).
		write, replay, read string
	}{
		{"disabled", func(u *identity.User) { u.Active = false }, "user_disabled", "user_disabled", "user_disabled"},
		{"create_ticket taken away", func(u *identity.User) { u.Functions = []string{ticket.GetName} }, "function_not_granted", "function_not_granted", ""},
		{"get_ticket taken away", func(u *identity.User) { u.Functions = []string{ticket.CreateName} }, "", "", "function_not_granted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var proxy *dynamotest.Proxy
			r := newRig(t, viaProxy(&proxy))
			a := r.call(create("user-a", "r-1", signIn))
			if g := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`)); kind(g) != "found" {
				t.Fatalf("read before the change: %s", g.raw)
			}
			u := localdb.DemoUsers[0]
			c.change(&u)
			if err := r.store.PutUser(context.Background(), u); err != nil {
				t.Fatal(err)
			}
			refused := ops{"GetItem": 1}

			var w reply
			got := r.measure(func() { w = r.call(create("user-a", "r-2", signIn)) })
			if c.write == "" {
				if kind(w) != "created" {
					t.Fatalf("write: %s", w.raw)
				}
			} else {
				if w.status != 403 || w.code() != c.write {
					t.Fatalf("write after the change: %d %s, want 403 %s", w.status, w.raw, c.write)
				}
				if !maps.Equal(got, refused) {
					t.Errorf("refused write took %v, want %v", got, refused)
				}
				if n := r.tickets(); n != 1 {
					t.Errorf("%d tickets after a refused write, want 1", n)
				}
			}

			var d reply
			got = r.measure(func() { d = r.call(create("user-a", "r-1", signIn)) })
			if c.replay == "" {
				if kind(d) != "deduplicated" {
					t.Fatalf("replay: %s", d.raw)
				}
			} else {
				if d.status != 403 || d.code() != c.replay || strings.Contains(d.raw, a.str("ticket_id")) {
					t.Fatalf("replay after the change: %d %s, want 403 %s", d.status, d.raw, c.replay)
				}
				if !maps.Equal(got, refused) {
					t.Errorf("refused replay took %v, want %v", got, refused)
				}
			}

			var g reply
			got = r.measure(func() { g = r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`)) })
			if c.read == "" {
				if kind(g) != "found" {
					t.Fatalf("read: %s", g.raw)
				}
			} else {
				if g.status != 403 || g.code() != c.read || strings.Contains(g.raw, "Cannot sign in") {
					t.Fatalf("read after the change: %d %s, want 403 %s", g.status, g.raw, c.read)
				}
				if !maps.Equal(got, refused) {
					t.Errorf("refused read took %v, want %v", got, refused)
				}
			}
			consistentReads(t, proxy)
		})
	}
}

// TestTenantMoveIsFollowed moves a user to another tenant: the next
// create_ticket is keyed and written in the new tenant, never the old one,
// and a read of the old tenant's ticket finds nothing.
func TestTenantMoveIsFollowed(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", signIn))
	u := localdb.DemoUsers[0]
	u.Tenant = "tenant-b"
	if err := r.store.PutUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	var b reply
	got := r.measure(func() { b = r.call(create("user-a", "r-1", signIn)) })
	if kind(b) != "created" || b.str("ticket_id") == a.str("ticket_id") {
		t.Fatalf("call after a tenant move: %s", b.raw)
	}
	// Two transactions: the first ticket of user-a's r-1 holds the id
	// ticket.IDFor names, so the first is cancelled, writing nothing, and
	// the second takes a random id.
	if want := (ops{"GetItem": 1, "TransactWriteItems": 2}); !maps.Equal(got, want) {
		t.Errorf("call after a tenant move took %v, want %v", got, want)
	}
	tk, err := r.store.Ticket(context.Background(), b.str("ticket_id"))
	if err != nil || tk == nil || tk.Tenant != "tenant-b" {
		t.Fatalf("ticket after a tenant move: %+v, %v", tk, err)
	}
	g := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`))
	if kind(g) != "ticket_not_found" {
		t.Fatalf("read of the old tenant's ticket: %s", g.raw)
	}
}

// TestDeletedUserIsRefused deletes a user with the admin's delete: every
// call of the user is refused as unknown, in the user read, and nothing is
// written or disclosed.
func TestDeletedUserIsRefused(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", signIn))
	admin := dynamo.NewAdmin(r.env.Client, r.env.Table)
	read, err := admin.User(context.Background(), "user-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteUser(context.Background(), read); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"write":  create("user-a", "r-2", signIn),
		"replay": create("user-a", "r-1", signIn),
		"read":   callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`),
	} {
		var p reply
		got := r.measure(func() { p = r.call(body) })
		if p.status != 403 || p.code() != "unknown_user" || strings.Contains(p.raw, a.str("ticket_id")) {
			t.Errorf("%s by a deleted user: %d %s", name, p.status, p.raw)
		}
		if want := (ops{"GetItem": 1}); !maps.Equal(got, want) {
			t.Errorf("%s by a deleted user took %v, want %v", name, got, want)
		}
	}
	if got := r.tickets(); got != 1 {
		t.Errorf("%d tickets, want 1", got)
	}
}

// TestTheFirstTicketOfARequestIDIsNamedByIt: the first ticket a user's
// request id creates has the id the store's FirstTicketID names, which is
// how the application's outcome read finds it with one read. A later operation under the same id (other
// arguments) finds that id taken, writes nothing with it, and is created
// under a random id; a repeat of either is deduplicated, never taken for
// the transaction's own lost answer.
func TestTheFirstTicketOfARequestIDIsNamedByIt(t *testing.T) {
	r := newRig(t)
	first := r.call(create("user-a", "r-1", signIn))
	named, err := r.store.FirstTicketID(context.Background(), "user-a", "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if kind(first) != "created" || first.str("ticket_id") != named {
		t.Fatalf("first ticket of r-1: %s; want ticket %s", first.raw, named)
	}
	var other reply
	got := r.measure(func() { other = r.call(create("user-a", "r-1", `{"title":"Printer on fire"}`)) })
	if kind(other) != "created" || other.str("ticket_id") == first.str("ticket_id") || !ticket.ValidID(other.str("ticket_id")) {
		t.Fatalf("second operation under r-1: %s", other.raw)
	}
	if want := (ops{"GetItem": 1, "TransactWriteItems": 2}); !maps.Equal(got, want) {
		t.Errorf("second operation under r-1 took %v, want %v (the first transaction cancelled on the taken id)", got, want)
	}
	for _, c := range []struct {
		args string
		want reply
	}{{signIn, first}, {`{"title":"Printer on fire"}`, other}} {
		again := r.call(create("user-a", "r-1", c.args))
		if kind(again) != "deduplicated" || again.str("ticket_id") != c.want.str("ticket_id") {
			t.Errorf("repeat of %s: %s, want ticket %s deduplicated", c.args, again.raw, c.want.str("ticket_id"))
		}
	}
	if ops, tks := r.operations(), r.tickets(); ops != 2 || tks != 2 {
		t.Errorf("%d operations, %d tickets; want 2 and 2", ops, tks)
	}
	rec, err := r.store.RequestRecord(context.Background(), "user-a", "r-1")
	if err != nil || rec == nil || rec.TicketID != first.str("ticket_id") {
		t.Errorf("request record %+v, %v; want the first ticket", rec, err)
	}
}
