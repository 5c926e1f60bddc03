package callback_test

// Faults injected under the HTTP path: each test breaks the store or the
// transport in one way and then counts items in the store, so that what the
// answers claim is checked against what was written.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/logtest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// repeatFault returns n copies of f.
func repeatFault(f dynamotest.Fault, n int) []dynamotest.Fault {
	out := make([]dynamotest.Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// ticketIDs returns the ids of the ticket items in the store.
func (r *rig) ticketIDs() []string {
	var ids []string
	for _, item := range r.env.Items(r.t, "ticket") {
		ids = append(ids, strings.TrimPrefix(attrString(item, dynamo.PartitionKey), "ticket#"))
	}
	return ids
}

// mustCreate makes one call that must create a ticket and returns its id.
func (r *rig) mustCreate(body string) string {
	r.t.Helper()
	p := r.call(body)
	if p.status != 200 || p.str("status") != "created" || p.body["deduplicated"] != false {
		r.t.Fatalf("want a created answer: %d %s", p.status, p.raw)
	}
	return p.str("ticket_id")
}

// TestFaultFailureInsideTransaction makes the transaction fail after its
// operation Put has been applied (the ticket Put collides with an existing
// ticket) or with a validation error on one action, and checks that neither
// the operation nor a ticket exists afterwards and that the next identical
// call creates exactly one.
func TestFaultFailureInsideTransaction(t *testing.T) {
	t.Run("ticket put fails after the claim", func(t *testing.T) {
		r := newRig(t)
		earlier := r.mustCreate(create("user-a", "r-existing", signIn))
		// The next call's ticket collides with copies of the earlier ticket
		// put behind oncecall's back under both ids it may take: the one
		// the outcome read names, then a random one.
		taken := ticket.NewID()
		first, err := r.store.FirstTicketID(context.Background(), "user-a", "r-1")
		if err != nil {
			t.Fatal(err)
		}
		r.env.CopyItem(t, "ticket#"+earlier, "ticket#"+first)
		r.env.CopyItem(t, "ticket#"+earlier, "ticket#"+taken)
		newID := r.h.NewID
		r.h.NewID = func() string { return taken }
		p := r.call(create("user-a", "r-1", signIn))
		if p.status != 500 || p.str("status") != "error" {
			t.Fatalf("collision inside the transaction: %d %s", p.status, p.raw)
		}
		if ops, tks := r.operations(), r.tickets(); ops != 1 || tks != 3 {
			t.Fatalf("after a cancelled transaction: %d operations, %d tickets; want 1 and 3 (the earlier call's and its copies)", ops, tks)
		}
		r.h.NewID = newID
		id := r.mustCreate(create("user-a", "r-1", signIn))
		if again := r.call(create("user-a", "r-1", signIn)); again.body["deduplicated"] != true || again.str("ticket_id") != id {
			t.Fatalf("repeat after recovery: %s", again.raw)
		}
		if ops, tks := r.operations(), r.tickets(); ops != 2 || tks != 4 {
			t.Fatalf("%d operations, %d tickets; want 2 and 4", ops, tks)
		}
	})
	t.Run("one action invalid", func(t *testing.T) {
		var proxy *dynamotest.Proxy
		r := newRig(t, viaProxy(&proxy))
		proxy.Inject("TransactWriteItems", dynamotest.Fault{Error: "TransactionCanceledException", Reasons: []string{"None", "ValidationError"}})
		p := r.call(create("user-a", "r-1", signIn))
		if p.status != 500 || p.str("status") != "error" {
			t.Fatalf("invalid action: %d %s", p.status, p.raw)
		}
		if got := proxy.Seen("TransactWriteItems"); got != 1 {
			t.Errorf("a validation failure was tried %d times; it is not retryable", got)
		}
		if r.operations() != 0 || r.tickets() != 0 {
			t.Fatal("a cancelled transaction left items")
		}
		r.mustCreate(create("user-a", "r-1", signIn))
		if n := r.tickets(); n != 1 {
			t.Fatalf("%d tickets, want 1", n)
		}
	})
}

// busyTimeout is the deadline of the calls that wait out contention: the
// store keeps callback.ResponseReserve of it for the answer, and the rest
// holds the user's read and several tries of the transaction even under
// the race detector on a busy machine.
const busyTimeout = callback.ResponseReserve + time.Second

// TestFaultContentionEndsBusy injects each kind of contention and throttling
// the store can answer for as long as the call has time: the store tries
// again with growing randomized waits until its next wait would pass the
// deadline (far more than dynamo.MaxAttempts tries), then the answer is
// busy; with a few faults only, the call commits, once.
func TestFaultContentionEndsBusy(t *testing.T) {
	faults := map[string]dynamotest.Fault{
		"TransactionConflict":    {Error: "TransactionCanceledException", Reasons: []string{"TransactionConflict", "None"}},
		"ThrottlingError reason": {Error: "TransactionCanceledException", Reasons: []string{"ThrottlingError", "None"}},
		"ThrottlingException":    {Error: "ThrottlingException"},
		"ProvisionedThroughput":  {Error: "ProvisionedThroughputExceededException"},
		"RequestLimitExceeded":   {Error: "RequestLimitExceeded"},
		"TransactionInProgress":  {Error: "TransactionInProgressException"},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			var proxy *dynamotest.Proxy
			r := newRig(t, viaProxy(&proxy), withTimeout(busyTimeout))
			r.mustCreate(create("user-a", "warm-up", signIn))
			seen := proxy.Seen("TransactWriteItems")
			proxy.Inject("TransactWriteItems", repeatFault(fault, 10000)...)
			p := r.call(create("user-a", "r-1", signIn))
			if p.status != 200 || p.str("status") != "busy" || p.body["retryable"] != true || !strings.Contains(p.str("message"), "Retry this same call") {
				t.Fatalf("after contention for the whole deadline: %d %s", p.status, p.raw)
			}
			if got := proxy.Seen("TransactWriteItems") - seen; got <= dynamo.MaxAttempts {
				t.Errorf("%d attempts within %v; contention is retried until the deadline, not dynamo.MaxAttempts = %d times", got, busyTimeout, dynamo.MaxAttempts)
			}
			proxy.Clear("TransactWriteItems")
			if n := r.tickets(); n != 1 {
				t.Fatalf("%d tickets after busy, want 1 (the warm-up's)", n)
			}
			// A few faults: a later attempt commits, once.
			proxy.Inject("TransactWriteItems", repeatFault(fault, 2)...)
			id := r.mustCreate(create("user-a", "r-1", signIn))
			if again := r.call(create("user-a", "r-1", signIn)); again.body["deduplicated"] != true || again.str("ticket_id") != id {
				t.Fatalf("repeat: %s", again.raw)
			}
			if n := r.tickets(); n != 2 {
				t.Fatalf("%d tickets, want 2", n)
			}
		})
	}
	t.Run("user lookup throttled", func(t *testing.T) {
		var proxy *dynamotest.Proxy
		r := newRig(t, viaProxy(&proxy), withTimeout(busyTimeout))
		proxy.Inject("GetItem", repeatFault(dynamotest.Fault{Error: "ThrottlingException"}, 10000)...)
		p := r.call(create("user-a", "r-1", signIn))
		if p.str("status") != "busy" || p.body["retryable"] != true {
			t.Fatalf("user read throttled: %d %s", p.status, p.raw)
		}
		if got := proxy.Seen("TransactWriteItems"); got != 0 {
			t.Fatalf("the transaction ran %d times without a user record", got)
		}
		if got := proxy.Seen("GetItem"); got <= dynamo.MaxAttempts {
			t.Errorf("%d lookups; throttling is retried until the deadline", got)
		}
	})
	t.Run("concurrent calls under contention", func(t *testing.T) {
		var proxy *dynamotest.Proxy
		r := newRig(t, viaProxy(&proxy))
		r.mustCreate(create("user-a", "warm-up", signIn))
		conflict := faults["TransactionConflict"]
		proxy.Inject("TransactWriteItems", repeatFault(conflict, 8)...)
		const n = 10
		replies := make([]reply, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { replies[i] = r.call(create("user-a", "r-contended", signIn)) })
		}
		wg.Wait()
		ids := map[string]bool{}
		created := 0
		for _, p := range replies {
			switch {
			case p.status != 200:
				t.Fatalf("non-200 under contention: %d %s", p.status, p.raw)
			case p.str("status") == "busy":
			case p.str("status") == "created":
				ids[p.str("ticket_id")] = true
				if p.body["deduplicated"] == false {
					created++
				}
			default:
				t.Fatalf("unexpected answer %s", p.raw)
			}
		}
		if len(ids) > 1 || created > 1 {
			t.Fatalf("%d tickets named, %d created answers", len(ids), created)
		}
		// Whatever the mix of busy and created, a repeat settles on one ticket.
		final := r.call(create("user-a", "r-contended", signIn))
		if final.str("status") != "created" || (len(ids) == 1 && !ids[final.str("ticket_id")]) {
			t.Fatalf("repeat after contention: %s", final.raw)
		}
		if got := r.tickets(); got != 2 {
			t.Fatalf("%d tickets, want 2 (warm-up and the contended one)", got)
		}
	})
}

// forwarder is a TCP relay in front of the store that can be taken down:
// while down its port refuses connections, as an unreachable store does.
type forwarder struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

// TestFaultServerErrorEnds500: a store fault that is not contention is
// retried within the same budget, then answered 500 (spec: anything but
// contention and throttling is an internal failure), writing nothing; the
// next identical call creates the ticket once.
func TestFaultServerErrorEnds500(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	r.mustCreate(create("user-a", "warm-up", signIn))
	seen := proxy.Seen("TransactWriteItems")
	proxy.Inject("TransactWriteItems", repeatFault(dynamotest.Fault{Error: "InternalServerError", Status: 500}, dynamo.MaxAttempts)...)
	p := r.call(create("user-a", "r-1", signIn))
	if p.status != 500 || p.str("status") != "error" {
		t.Fatalf("after %d server faults: %d %s", dynamo.MaxAttempts, p.status, p.raw)
	}
	if got := proxy.Seen("TransactWriteItems") - seen; got != dynamo.MaxAttempts {
		t.Errorf("%d attempts, want the budget dynamo.MaxAttempts = %d", got, dynamo.MaxAttempts)
	}
	if n := r.tickets(); n != 1 {
		t.Fatalf("%d tickets, want 1 (the warm-up's)", n)
	}
	r.mustCreate(create("user-a", "r-1", signIn))
	if n := r.tickets(); n != 2 {
		t.Fatalf("%d tickets after the retry, want 2", n)
	}
}

func newForwarder(t testing.TB, targetURL string) *forwarder {
	f := &forwarder{t: t, target: strings.TrimPrefix(targetURL, "http://")}
	f.up("127.0.0.1:0")
	t.Cleanup(f.down)
	return f
}

func (f *forwarder) URL() string { return "http://" + f.addr }

func (f *forwarder) up(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		f.t.Fatalf("forwarder: %v", err)
	}
	f.mu.Lock()
	f.ln, f.addr = ln, ln.Addr().String()
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, s)
			f.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

// down closes the port and every relayed connection.
func (f *forwarder) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// TestFaultStoreUnreachable takes the store's port away: the call ends 500
// after the bounded retries (an unreachable store is a failure, not
// contention) and writes nothing; when the store is back the same call
// creates one ticket.
func TestFaultStoreUnreachable(t *testing.T) {
	var fw *forwarder
	r := newRig(t, func(r *rig, env *dynamotest.Env) dynamo.API {
		fw = newForwarder(r.t, env.Endpoint)
		return dynamotest.NewClient(r.t, fw.URL(), env.Requests)
	})
	for _, warm := range []bool{false, true} {
		if warm {
			r.mustCreate(create("user-a", "warm-up", signIn))
		}
		fw.down()
		r.env.Requests.Reset()
		p := r.call(create("user-a", "r-1", signIn))
		if p.status != 500 || p.str("status") != "error" {
			t.Fatalf("warm=%v, store unreachable: %d %s", warm, p.status, p.raw)
		}
		if got := r.env.Requests.Load(); got != int64(dynamo.MaxAttempts) {
			t.Errorf("warm=%v: %d attempts, want %d", warm, got, dynamo.MaxAttempts)
		}
		fw.up(fw.addr)
		want := 0
		if warm {
			want = 1
		}
		if n := r.tickets(); n != want {
			t.Fatalf("warm=%v: %d tickets after an unreachable store, want %d", warm, n, want)
		}
	}
	r.mustCreate(create("user-a", "r-1", signIn))
	if n := r.tickets(); n != 2 {
		t.Fatalf("%d tickets, want 2", n)
	}
}

// deadlineServer serves the rig's handler over HTTP with a request deadline
// of d, as a Lambda invocation has one.
func deadlineServer(t testing.TB, h *callback.Handler, d time.Duration) *httptest.Server {
	inner := httpapi.New(h, httpapi.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), d)
		defer cancel()
		inner.ServeHTTP(w, req.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFaultSlowStoreAnswersBeforeTheDeadline makes the store hang or answer
// too late: the call must be answered busy before the request's deadline,
// never hang, and leave nothing behind.
func TestFaultSlowStoreAnswersBeforeTheDeadline(t *testing.T) {
	const deadline = time.Second
	for name, fault := range map[string]dynamotest.Fault{
		"hang":             {Hang: true},
		"slower than time": {Delay: 20 * time.Second},
	} {
		for _, op := range []string{"GetItem", "TransactWriteItems"} {
			// Not parallel: the embedded store is not safe for tables
			// created concurrently.
			t.Run(name+" "+op, func(t *testing.T) {
				var proxy *dynamotest.Proxy
				r := newRig(t, viaProxy(&proxy))
				if op == "TransactWriteItems" {
					r.mustCreate(create("user-a", "warm-up", signIn))
				}
				srv := deadlineServer(t, r.h, deadline)
				seen := proxy.Seen(op)
				proxy.Inject(op, fault)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+httpapi.CallbackPath, strings.NewReader(create("user-a", "r-1", signIn)))
				req.Header.Set(protocol.NonceHeader, validNonce(t))
				start := time.Now()
				p := r.do(req)
				if took := time.Since(start); took >= deadline {
					t.Fatalf("answered after %v, at or past the %v deadline", took, deadline)
				}
				if p.status != 200 || p.str("status") != "busy" || p.body["retryable"] != true {
					t.Fatalf("slow store: %d %s", p.status, p.raw)
				}
				if got := proxy.Seen(op) - seen; got != 1 {
					t.Errorf("%s was tried %d times; no time was left for another", op, got)
				}
			})
		}
	}
	t.Run("deadline inside the reserve", func(t *testing.T) {
		var proxy *dynamotest.Proxy
		r := newRig(t, viaProxy(&proxy))
		srv := deadlineServer(t, r.h, callback.ResponseReserve/2)
		proxy.Inject("GetItem", dynamotest.Fault{Hang: true})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+httpapi.CallbackPath, strings.NewReader(create("user-a", "r-1", signIn)))
		req.Header.Set(protocol.NonceHeader, validNonce(t))
		if p := r.do(req); p.status != 200 || p.str("status") != "busy" {
			t.Fatalf("no time left for the store: %d %s", p.status, p.raw)
		}
		if r.tickets() != 0 || r.operations() != 0 {
			t.Fatal("a call without time wrote something")
		}
	})
}

// abortingServer runs the real handler, so that the call commits, and then
// drops the connection instead of writing the answer: the process died
// between the commit and the response.
func abortingServer(t testing.TB, h *callback.Handler) *httptest.Server {
	inner := httpapi.New(h, httpapi.Options{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		inner.ServeHTTP(discard{http.Header{}}, req)
		panic(http.ErrAbortHandler)
	}))
	srv.Config.ErrorLog = nil
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// TestFaultCrashAfterCommit loses the answer of a committed call in three
// places: between the server and the client, between the store and the
// server with the store unable to confirm in time, and between the store
// and the server once. The next identical call gets the stored result,
// deduplicated, and there is one ticket.
func TestFaultCrashAfterCommit(t *testing.T) {
	body := create("user-a", "r-1", signIn)
	t.Run("response never written", func(t *testing.T) {
		r := newRig(t)
		srv := abortingServer(t, r.h)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+httpapi.CallbackPath, strings.NewReader(body))
		req.Header.Set(protocol.NonceHeader, validNonce(t))
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			t.Fatalf("the client got an answer (%d) from a server that died", res.StatusCode)
		}
		ids := r.ticketIDs()
		if len(ids) != 1 {
			t.Fatalf("%d tickets after the commit, want 1", len(ids))
		}
		p := r.call(body)
		if p.status != 200 || p.str("status") != "created" || p.body["deduplicated"] != true || p.str("ticket_id") != ids[0] {
			t.Fatalf("next identical call: %d %s; want the stored ticket %s deduplicated", p.status, p.raw, ids[0])
		}
		if n := r.tickets(); n != 1 {
			t.Fatalf("%d tickets, want 1", n)
		}
	})
	t.Run("store answer lost, retries exhausted", func(t *testing.T) {
		var proxy *dynamotest.Proxy
		r := newRig(t, viaProxy(&proxy), withTimeout(busyTimeout))
		r.mustCreate(create("user-a", "warm-up", signIn))
		proxy.Inject("TransactWriteItems", append([]dynamotest.Fault{{AfterCommit: true}},
			repeatFault(dynamotest.Fault{Error: "ThrottlingException"}, 10000)...)...)
		p := r.call(body)
		if p.status != 200 || p.str("status") != "busy" {
			t.Fatalf("commit unconfirmed: %d %s", p.status, p.raw)
		}
		proxy.Clear("TransactWriteItems")
		if n := r.tickets(); n != 2 {
			t.Fatalf("%d tickets, want 2: the commit happened", n)
		}
		next := r.call(body)
		if next.str("status") != "created" || next.body["deduplicated"] != true {
			t.Fatalf("next identical call: %s", next.raw)
		}
		rec := r.operation(t, "user-a", "r-1", signIn)
		if rec == nil || rec.TicketID != next.str("ticket_id") {
			t.Fatalf("answer names %s, the operation holds %+v", next.str("ticket_id"), rec)
		}
		if n := r.tickets(); n != 2 {
			t.Fatalf("%d tickets, want 2", n)
		}
	})
	t.Run("store answer lost once", func(t *testing.T) {
		var proxy *dynamotest.Proxy
		r := newRig(t, viaProxy(&proxy))
		proxy.Inject("TransactWriteItems", dynamotest.Fault{AfterCommit: true})
		id := r.mustCreate(body)
		if next := r.call(body); next.body["deduplicated"] != true || next.str("ticket_id") != id {
			t.Fatalf("next identical call: %s", next.raw)
		}
		if n := r.tickets(); n != 1 {
			t.Fatalf("%d tickets, want 1", n)
		}
	})
}

// operation reads the operation record of a create_ticket call.
func (r *rig) operation(t testing.TB, user, requestID, args string) *idempotency.Record {
	t.Helper()
	u, err := r.store.LoadUser(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	key := opKey(t, r.h.Policies.For(ticket.CreateName), u.Tenant, requestID, args)
	rec, err := r.store.Operation(context.Background(), key.ID)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// restarted is a second server over the same table: a new process with a
// new store client and its own listener.
func (r *rig) restarted(t testing.TB) *rig {
	t.Helper()
	r2 := &rig{t: t, env: r.env, logs: &logtest.Buffer{}, now: r.clock()}
	r2.store = dynamo.New(dynamotest.NewClient(t, r.env.Endpoint, r.env.Requests), r.env.Table, dynamo.WithClock(r2.clock))
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	r2.h = callback.NewHandler(v, r2.store, nil)
	r2.h.Now = r2.clock
	r2.srv = httptest.NewServer(httpapi.New(r2.h, httpapi.Options{}))
	t.Cleanup(r2.srv.Close)
	return r2
}

// TestFaultRestartReusesStoredResult stops the first server and asks a
// second one, sharing only the store, for the same operation. (The same with
// real processes, and against DYNAMODB_ENDPOINT when set, is in
// internal/bench/loadtest.)
func TestFaultRestartReusesStoredResult(t *testing.T) {
	r := newRig(t)
	first := r.call(create("user-a", "r-1", signIn))
	r.srv.Close()
	r2 := r.restarted(t)
	again := r2.call(create("user-a", "r-1", signIn))
	if again.status != 200 || again.body["deduplicated"] != true || again.str("ticket_id") != first.str("ticket_id") {
		t.Fatalf("after a restart: %s; first answer %s", again.raw, first.raw)
	}
	if strings.Replace(again.raw, `"deduplicated":true`, `"deduplicated":false`, 1) != first.raw {
		t.Errorf("the restarted server answers differently:\n%s\n%s", first.raw, again.raw)
	}
	if n := r2.tickets(); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
}

// TestFaultPendingIsHeld injects a pending operation and checks it from
// every side: its owner always gets in_progress, inside
// the window and (without an expiry) years later; another user of the tenant
// gets a conflict that discloses nothing; the record is never rewritten and
// no ticket is made.
func TestFaultPendingIsHeld(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	put := func(rid string, expires time.Time) idempotency.Record {
		key := opKey(t, idempotency.PolicyArguments, "tenant-a", rid, signIn)
		rec := idempotency.Record{Key: key.ID, UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
			State: idempotency.Pending, Fingerprint: key.Fingerprint, CreatedAt: r.clock(), ExpiresAt: expires}
		if err := r.store.PutOperation(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	held := put("r-pending", r.clock().Add(time.Hour))
	forever := put("r-forever", time.Time{})
	check := func(rid string) {
		t.Helper()
		for range 3 {
			p := r.call(create("user-a", rid, signIn))
			if p.status != 200 || p.str("status") != "in_progress" || p.body["retryable"] != true || p.str("ticket_id") != "" {
				t.Fatalf("%s: %d %s", rid, p.status, p.raw)
			}
		}
		b := r.call(create("user-b", rid, signIn))
		if b.status != 403 || b.code() != "request_id_conflict" || strings.Contains(b.raw, "progress") {
			t.Fatalf("%s by another user of the tenant: %d %s", rid, b.status, b.raw)
		}
	}
	check("r-pending")
	check("r-forever")
	r.advance(59 * time.Minute)
	check("r-pending")
	r.advance(10 * 365 * 24 * time.Hour)
	check("r-forever")
	for _, want := range []idempotency.Record{held, forever} {
		got, err := r.store.Operation(context.Background(), want.Key)
		if err != nil || got == nil || got.State != idempotency.Pending || got.TicketID != "" || !got.CreatedAt.Equal(want.CreatedAt.Truncate(time.Second)) {
			t.Fatalf("the pending record was rewritten: %+v, %v", got, err)
		}
	}
	if n := r.tickets(); n != 0 {
		t.Fatalf("a pending operation was executed: %d tickets", n)
	}
}

// TestFaultExpiryBoundary walks an operation across the end of its window
// with an injected clock that is not on a whole second: inside the window
// the call is deduplicated, at the end of the window's last second an
// expired item that is still present (TTL has not run) counts as absent and
// the call creates a new ticket.
func TestFaultExpiryBoundary(t *testing.T) {
	r := newRig(t)
	r.h.Retention = time.Hour
	r.advance(500 * time.Millisecond) // created at 12:00:00.5, expires 13:00:00.5
	first := r.mustCreate(create("user-a", "r-1", signIn))
	steps := []struct {
		at   time.Duration // since creation
		want string        // "dedup" or "new"
	}{
		{59*time.Minute + 59*time.Second, "dedup"},
		{time.Hour - 300*time.Millisecond, "dedup"}, // 13:00:00.2, inside the window
		{time.Hour, "dedup"},                        // the last instant of the window
		{time.Hour + 400*time.Millisecond, "dedup"}, // 13:00:00.9: the expiry second is kept whole
		{time.Hour + 500*time.Millisecond, "new"},   // 13:00:01.0: expired, item still present
	}
	created := r.clock()
	for _, s := range steps {
		r.mu.Lock()
		r.now = created.Add(s.at)
		r.mu.Unlock()
		if s.want == "new" && r.operations() != 1 {
			t.Fatal("the expired operation item is gone; the test needs it present")
		}
		p := r.call(create("user-a", "r-1", signIn))
		switch s.want {
		case "dedup":
			if p.status != 200 || p.body["deduplicated"] != true || p.str("ticket_id") != first {
				t.Fatalf("at creation+%v: %d %s; want ticket %s deduplicated", s.at, p.status, p.raw, first)
			}
		case "new":
			if p.status != 200 || p.str("status") != "created" || p.body["deduplicated"] != false || p.str("ticket_id") == first {
				t.Fatalf("at creation+%v: %d %s; want a new ticket", s.at, p.status, p.raw)
			}
		}
	}
	if ops, tks := r.operations(), r.tickets(); ops != 1 || tks != 2 {
		t.Fatalf("%d operations, %d tickets; want 1 (reclaimed) and 2", ops, tks)
	}
}

// attrString reads a string attribute of a raw item.
func attrString(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// parseArgs decodes arguments as the handler does.
func parseArgs(s string) (map[string]any, error) {
	v, err := canonjson.Parse([]byte(s), canonjson.Limits{})
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("arguments are not a JSON object")
	}
	return m, nil
}
