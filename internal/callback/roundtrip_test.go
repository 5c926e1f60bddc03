package callback_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dev/dynamotest"
	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
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

// TestEveryWarmCallIsOneRequest counts, with an SDK middleware, the store
// requests of each kind of warm call on a store that returns the old item
// with a cancellation, as DynamoDB does: one each, and of the kind named.
func TestEveryWarmCallIsOneRequest(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	first := r.call(create("user-a", "r-1", signIn)) // also caches alice
	r.call(create("user-b", "warm-up-b", signIn))    // caches bob
	pending := opKey(t, idempotency.PolicyArguments, "tenant-a", "r-pending", signIn)
	err := r.store.PutOperation(context.Background(), idempotency.Record{Key: pending.ID, UserID: "user-a", Tenant: "tenant-a",
		Function: ticket.CreateName, State: idempotency.Pending, Fingerprint: pending.Fingerprint, CreatedAt: r.clock(), ExpiresAt: r.clock().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	write := ops{"TransactWriteItems": 1}
	read := ops{"TransactGetItems": 1}
	steps := []struct {
		name, body, kind string
		want             ops
	}{
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
			t.Errorf("warm %s took %v, want %v", s.name, got, s.want)
		}
	}
}

// TestWarmReusedRequestIDIsOneRequest covers the request policy's replay
// with other arguments.
func TestWarmReusedRequestIDIsOneRequest(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	r.h.Policies = idempotency.Policies{ticket.CreateName: idempotency.PolicyRequest}
	r.call(create("user-a", "approved-1", signIn))
	var p reply
	got := r.measure(func() { p = r.call(create("user-a", "approved-1", `{"title":"Another title"}`)) })
	if kind(p) != "request_id_reused" {
		t.Fatalf("got %s", p.raw)
	}
	if want := (ops{"TransactWriteItems": 1}); !maps.Equal(got, want) {
		t.Errorf("reused request_id took %v, want %v", got, want)
	}
}

// TestColdUserLoadIsOneGetItem checks that the first call of a user adds
// exactly one consistent GetItem of the user record, that the next call of
// the same user adds none, and that without a cache every call adds one.
func TestColdUserLoadIsOneGetItem(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	cold := r.measure(func() { r.call(create("user-a", "r-1", signIn)) })
	if want := (ops{"GetItem": 1, "TransactWriteItems": 1}); !maps.Equal(cold, want) {
		t.Errorf("cold created call took %v, want %v", cold, want)
	}
	warm := r.measure(func() { r.call(create("user-a", "r-1", signIn)) })
	if want := (ops{"TransactWriteItems": 1}); !maps.Equal(warm, want) {
		t.Errorf("warm replay took %v, want %v", warm, want)
	}
	coldRead := r.measure(func() { r.call(callBody("user-b", "", "get_ticket", `{"ticket_id":"`+ticket.NewID()+`"}`)) })
	if want := (ops{"GetItem": 1, "TransactGetItems": 1}); !maps.Equal(coldRead, want) {
		t.Errorf("cold get_ticket took %v, want %v", coldRead, want)
	}

	// USER_CACHE_TTL=0: no cache, one GetItem on every call.
	r.h.Users = identity.NewDirectory(r.store, 0, r.clock)
	for i := range 3 {
		got := r.measure(func() { r.call(create("user-a", "r-1", signIn)) })
		if want := (ops{"GetItem": 1, "TransactWriteItems": 1}); !maps.Equal(got, want) {
			t.Errorf("uncached call %d took %v, want %v", i, got, want)
		}
	}
	// The cache expires after its TTL.
	r.h.Users = identity.NewDirectory(r.store, time.Minute, r.clock)
	r.call(create("user-a", "r-1", signIn))
	r.advance(time.Minute)
	got := r.measure(func() { r.call(create("user-a", "r-1", signIn)) })
	if want := (ops{"GetItem": 1, "TransactWriteItems": 1}); !maps.Equal(got, want) {
		t.Errorf("call after the cache TTL took %v, want %v", got, want)
	}
}

// TestAuthorizationIsNeverStale changes a cached user's record behind the
// cache and checks that the very next write and read see the change, in the
// one request they make, that the answer names the condition that failed,
// and that nothing is written or disclosed.
func TestAuthorizationIsNeverStale(t *testing.T) {
	cases := []struct {
		name   string
		change func(*identity.User)
		// write: code of a new create_ticket, and of a replay of the
		// cached user's completed operation; read: code of get_ticket of
		// the ticket it created ("" for found).
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
			a := r.call(create("user-a", "r-1", signIn)) // caches alice
			u := localdb.DemoUsers[0]
			c.change(&u)
			if err := r.store.PutUser(context.Background(), u); err != nil {
				t.Fatal(err)
			}

			var w reply
			got := r.measure(func() { w = r.call(create("user-a", "r-2", signIn)) })
			if c.write == "" {
				if kind(w) != "created" {
					t.Fatalf("write: %s", w.raw)
				}
			} else {
				if w.status != 403 || w.code() != c.write {
					t.Fatalf("write with a warm cache: %d %s, want 403 %s", w.status, w.raw, c.write)
				}
				if want := (ops{"TransactWriteItems": 1}); !maps.Equal(got, want) {
					t.Errorf("refused write took %v, want %v", got, want)
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
					t.Fatalf("replay after revocation: %d %s, want 403 %s", d.status, d.raw, c.replay)
				}
				// The refused write cached the record as it is now; a
				// refusal reloads it once before answering (a grant may
				// have come back), and writes nothing.
				if want := (ops{"GetItem": 1}); !maps.Equal(got, want) {
					t.Errorf("replay after a refused write took %v, want %v", got, want)
				}
			}

			g := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`))
			if c.read == "" {
				if kind(g) != "found" {
					t.Fatalf("read: %s", g.raw)
				}
			} else if g.status != 403 || g.code() != c.read || strings.Contains(g.raw, "Cannot sign in") {
				t.Fatalf("read after revocation: %d %s, want 403 %s", g.status, g.raw, c.read)
			}
		})
	}
}

// TestReadSeesRevocationWithAWarmCache revokes a user after a read cached
// it: the next read, in its one request, is refused and discloses nothing.
func TestReadSeesRevocationWithAWarmCache(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-b", "r-1", signIn))
	if g := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`)); kind(g) != "found" {
		t.Fatalf("read: %s", g.raw)
	}
	u := localdb.DemoUsers[0]
	u.Active = false
	if err := r.store.PutUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	var g reply
	got := r.measure(func() { g = r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`)) })
	if g.status != 403 || g.code() != "user_disabled" || strings.Contains(g.raw, "Cannot sign in") {
		t.Fatalf("read by a disabled user with a warm cache: %d %s", g.status, g.raw)
	}
	if want := (ops{"TransactGetItems": 1}); !maps.Equal(got, want) {
		t.Errorf("refused read took %v, want %v", got, want)
	}
}

// TestTenantMoveIsFollowed moves a cached user to another tenant: the next
// create_ticket is keyed and written in the new tenant, never the old one,
// and a read of the old tenant's ticket finds nothing.
func TestTenantMoveIsFollowed(t *testing.T) {
	r := newRig(t)
	a := r.call(create("user-a", "r-1", signIn)) // caches alice in tenant-a
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
	// The first transaction fails its user check; the second, with the key
	// derived from the record it returned, commits.
	if want := (ops{"TransactWriteItems": 2}); !maps.Equal(got, want) {
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

// TestDeletedUserIsRefused deletes a cached user (its record and every copy
// of its grant, as Admin.DeleteUser does). Neither a write
// nor a replay goes through or discloses anything; a read says the user is
// unknown and drops it from the cache. (The write's user check fails as a
// condition on the missing item: 403, nothing written.)
func TestDeletedUserIsRefused(t *testing.T) {
	r := newRig(t)
	const want = 403
	a := r.call(create("user-a", "r-1", signIn)) // caches alice
	if err := dynamo.NewAdmin(r.env.Client, r.env.Table).DeleteUser(context.Background(), "user-a"); err != nil {
		t.Fatal(err)
	}
	w := r.call(create("user-a", "r-2", signIn))
	if w.status != want {
		t.Fatalf("write by a deleted user with a warm cache: %d %s, want %d", w.status, w.raw, want)
	}
	d := r.call(create("user-a", "r-1", signIn))
	if d.status != want || strings.Contains(d.raw, a.str("ticket_id")) {
		t.Fatalf("replay to a deleted user with a warm cache: %d %s, want %d", d.status, d.raw, want)
	}
	g := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+a.str("ticket_id")+`"}`))
	if g.status != 403 || g.code() != "unknown_user" || strings.Contains(g.raw, "Cannot sign in") {
		t.Fatalf("read by a deleted user: %d %s", g.status, g.raw)
	}
	var n reply
	got := r.measure(func() { n = r.call(create("user-a", "r-3", signIn)) })
	if n.status != 403 || n.code() != "unknown_user" {
		t.Fatalf("call after the read: %d %s", n.status, n.raw)
	}
	if want := (ops{"GetItem": 1}); !maps.Equal(got, want) {
		t.Errorf("call of an unknown user took %v, want %v", got, want)
	}
	if got := r.tickets(); got != 1 {
		t.Errorf("%d tickets, want 1", got)
	}
}

// TestRefusalsOnACachedRecordReloadIt: a refusal never rests on a cached
// record alone. A cached record that would refuse the call (disabled, or
// the function not granted) is loaded again first, whatever function is
// called, even one that does not exist; a record just loaded from the store
// is not loaded twice.
func TestRefusalsOnACachedRecordReloadIt(t *testing.T) {
	r := newRig(t)
	put := func(id string, active bool, functions ...string) {
		t.Helper()
		for _, u := range localdb.DemoUsers {
			if u.ExternalID == id {
				u.Active, u.Functions = active, functions
				if err := r.store.PutUser(context.Background(), u); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("no demo user %s", id)
	}
	step := func(name, body, wantKind string, want ops) {
		t.Helper()
		var p reply
		got := r.measure(func() { p = r.call(body) })
		if kind(p) != wantKind {
			t.Errorf("%s: %d %s, want %s", name, p.status, p.raw, wantKind)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s took %v, want %v", name, got, want)
		}
	}
	unknown := callBody("user-d", "r-1", "close_ticket", `{}`)

	// Cold: the record comes from the store, and is refused as it is.
	step("cold disabled user", create("user-d", "r-1", signIn), "user_disabled", ops{"GetItem": 1})
	step("cold user without the function", create("user-e", "r-1", signIn), "function_not_granted", ops{"GetItem": 1})

	// Cached and still disabled: reloaded, then refused.
	step("cached disabled user, unknown function", unknown, "user_disabled", ops{"GetItem": 1})

	// Enabled behind the cache: the reload finds it active.
	put("user-d", true, ticket.CreateName, ticket.GetName)
	step("cached disabled user enabled since, unknown function", unknown, "unknown_function", ops{"GetItem": 1})

	// Granted behind the cache: the reload finds the grant.
	put("user-e", true, ticket.CreateName, ticket.GetName)
	step("cached user granted since", create("user-e", "r-1", signIn), "created", ops{"GetItem": 1, "TransactWriteItems": 1})

	// A cached record that refuses nothing is not reloaded.
	step("cached active user, unknown function", unknown, "unknown_function", ops{})
}
