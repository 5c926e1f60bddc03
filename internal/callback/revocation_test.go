package callback_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// setActive makes an operator's change of the user's state, as
// oncecall-admin makes it: read the record, then write it conditional on
// the version read.
func setActive(admin *dynamo.Admin, id string, active bool) error {
	ctx := context.Background()
	read, err := admin.User(ctx, id)
	if err != nil {
		return err
	}
	to := read.User
	to.Active = active
	_, err = admin.UpdateUser(ctx, read, to)
	return err
}

// refusedFromNowOn checks that user, whose create_ticket call created first,
// may do nothing any more: a new operation, a replay of first's and a read
// of its ticket are refused with code and disclose nothing, and no ticket
// is written. probes more new operations are tried, each with its own key.
func refusedFromNowOn(t *testing.T, r *rig, user string, first reply, code string, probes int) {
	t.Helper()
	before := r.tickets()
	for i := range probes {
		if p := r.call(create(user, fmt.Sprintf("after-%d", i), signIn)); p.status != 403 || p.code() != code {
			t.Fatalf("a new operation (%d of %d) after the change: %d %s, want 403 %s", i+1, probes, p.status, p.raw, code)
		}
	}
	if p := r.call(create(user, "r-1", signIn)); p.status != 403 || p.code() != code || strings.Contains(p.raw, first.str("ticket_id")) {
		t.Fatalf("a replay after the change: %d %s, want 403 %s", p.status, p.raw, code)
	}
	g := r.call(callBody(user, "", "get_ticket", `{"ticket_id":"`+first.str("ticket_id")+`"}`))
	if g.status != 403 || g.code() != code || strings.Contains(g.raw, "Cannot sign in") {
		t.Fatalf("a read of its ticket after the change: %d %s, want 403 %s", g.status, g.raw, code)
	}
	if n := r.tickets(); n != before {
		t.Fatalf("%d tickets written after the change", n-before)
	}
}

// TestADisableWhoseAnswerWasLost: the disable's write applies and its
// answer is lost, so the change is sent again and meets its own write. The
// operator is told it is done, and it is: every call of the user is
// refused, on a container that has served the user before.
func TestADisableWhoseAnswerWasLost(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	first := r.call(create("user-a", "r-1", signIn))
	if kind(first) != "created" {
		t.Fatalf("first call: %s", first.raw)
	}
	admin := dynamo.NewAdmin(dynamotest.NewClient(t, proxy.URL, nil), r.env.Table)
	proxy.Inject("UpdateItem", dynamotest.Fault{AfterCommit: true})
	if err := setActive(admin, "user-a", false); err != nil {
		t.Fatalf("disable whose answer was lost: %v", err)
	}
	if n := proxy.Seen("UpdateItem"); n < 2 {
		t.Fatalf("%d UpdateItem requests: the lost answer was not sent again", n)
	}
	refusedFromNowOn(t, r, "user-a", first, "user_disabled", 20)
}

// TestAChangeRunAgainFinishesIt: a disable runs while every other write
// of the store fails, as if the run were cut short; the operator runs the
// same change again, as told. From then on every call of the user is
// refused.
func TestAChangeRunAgainFinishesIt(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	first := r.call(create("user-a", "r-1", signIn))
	admin := dynamo.NewAdmin(dynamotest.NewClient(t, proxy.URL, nil), r.env.Table)
	proxy.Inject("PutItem", repeatFault(dynamotest.Fault{Error: "InternalServerError", Status: 500}, 100_000)...)
	if err := setActive(admin, "user-a", false); err != nil {
		t.Logf("the first run failed: %v", err)
	}
	proxy.Clear("PutItem")
	if err := setActive(admin, "user-a", false); err != nil {
		t.Fatalf("the same change run again: %v", err)
	}
	refusedFromNowOn(t, r, "user-a", first, "user_disabled", 40)
}

// TestChangesFollowTheirOrderNotTheirClocks: an operator whose clock runs
// two minutes fast enables dave; then one whose clock is right disables
// him. The later change holds.
func TestChangesFollowTheirOrderNotTheirClocks(t *testing.T) {
	r := newRig(t)
	fast := dynamo.New(r.env.Client, r.env.Table, dynamo.WithClock(func() time.Time { return time.Now().Add(2 * time.Minute) }))
	dave := localdb.DemoUsers[3]
	if dave.ExternalID != "user-d" || dave.Active {
		t.Fatalf("demo user %+v is not disabled dave", dave)
	}
	dave.Active = true
	if err := fast.PutUser(context.Background(), dave); err != nil {
		t.Fatal(err)
	}
	first := r.call(create("user-d", "r-1", signIn))
	if kind(first) != "created" {
		t.Fatalf("dave enabled: %s", first.raw)
	}
	if err := setActive(dynamo.NewAdmin(r.env.Client, r.env.Table), "user-d", false); err != nil {
		t.Fatalf("the later disable: %v", err)
	}
	refusedFromNowOn(t, r, "user-d", first, "user_disabled", 40)
}

// TestATokenIsNeverSentAgainWithOtherContent: on DynamoDB a
// TransactWriteItems' ClientRequestToken sent again with other parameters
// within 10 minutes is refused (IdempotentParameterMismatch), a first use
// that was cancelled included; the proxy applies that rule. A user whose
// record is all the table holds of it (written by an earlier version, or
// by hand) creates its ticket, and its replay is answered.
func TestATokenIsNeverSentAgainWithOtherContent(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	rule := &dynamotest.Tokens{}
	proxy.Tokens = rule
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := r.env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(r.env.Table), Item: map[string]types.AttributeValue{
		"pk": s("user#user-x"), "kind": s("user"), "tenant_id": s("tenant-a"), "name": s("xavier"),
		"active": &types.AttributeValueMemberBOOL{Value: true}, "functions": &types.AttributeValueMemberSS{Value: []string{ticket.CreateName, ticket.GetName}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	first := r.call(create("user-x", "r-1", signIn))
	if kind(first) != "created" {
		t.Fatalf("a user whose record alone is in the table: %d %s (tokens refused: %d)", first.status, first.raw, rule.Mismatches())
	}
	if again := r.call(create("user-x", "r-1", signIn)); kind(again) != "deduplicated" || again.str("ticket_id") != first.str("ticket_id") {
		t.Fatalf("its replay: %d %s", again.status, again.raw)
	}
	if n := rule.Mismatches(); n != 0 {
		t.Fatalf("%d transactions sent again with a spent token and other content", n)
	}
}

// TestDeletingTheRecordRevokes: the user's record is deleted by hand,
// not by oncecall-admin. Every call of the user is refused as unknown from
// then on.
func TestDeletingTheRecordRevokes(t *testing.T) {
	r := newRig(t)
	first := r.call(create("user-a", "r-1", signIn))
	r.env.DeleteItem(t, "user#user-a")
	refusedFromNowOn(t, r, "user-a", first, "unknown_user", 40)
	if _, err := r.store.LoadUser(context.Background(), "user-a"); !errors.Is(err, identity.ErrUnknown) {
		t.Fatalf("the record is still there: %v", err)
	}
}

// deadlines is a callback.Store that records the deadline of every
// request's context, over a real store.
type deadlines struct {
	callback.Store
	mu   sync.Mutex
	seen []time.Time
}

func (d *deadlines) note(ctx context.Context) {
	dl, ok := ctx.Deadline()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !ok {
		dl = time.Time{}
	}
	d.seen = append(d.seen, dl)
}

func (d *deadlines) LoadUser(ctx context.Context, id string) (identity.User, error) {
	d.note(ctx)
	return d.Store.LoadUser(ctx, id)
}

func (d *deadlines) Create(ctx context.Context, rec idempotency.Record, t ticket.Ticket, out *delivery.Record) (idempotency.Record, bool, error) {
	d.note(ctx)
	return d.Store.Create(ctx, rec, t, out)
}

func (d *deadlines) ReadTicket(ctx context.Context, id string) (*ticket.Ticket, *delivery.Record, error) {
	d.note(ctx)
	return d.Store.ReadTicket(ctx, id)
}

// TestEveryCallIsBoundedByTheDeadline: a call handed to the handler with
// no deadline of its own (the local server's doors, a test) still has
// callback.Deadline: every store request it makes carries a deadline no
// later than that after the call began, whichever door it came by.
func TestEveryCallIsBoundedByTheDeadline(t *testing.T) {
	r := newRig(t)
	d := &deadlines{Store: r.store}
	r.h.Store = d
	start := time.Now()
	first := r.h.Call(context.Background(), callback.Request{Nonce: validNonce(t), Body: []byte(create("user-a", "r-1", signIn))})
	got := r.h.Call(context.Background(), callback.Request{Nonce: validNonce(t), Body: []byte(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+ticketID(t, first.Body())+`"}`))})
	served := r.h.Serve(context.Background(), callback.Call{Door: callback.CallbackDoor, Nonce: validNonce(t), Function: ticket.CreateName,
		Arguments: map[string]any{"title": "Cannot sign in"}, ExternalUserID: "user-a", RequestID: "r-2"})
	end := time.Now()
	for i, a := range []protocol.Answer{first, got, served} {
		if a.Status != 200 {
			t.Fatalf("call %d: %d %s", i, a.Status, a.Body())
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) != 6 {
		t.Fatalf("%d store requests recorded, want 6 (a user read and a create or read per call)", len(d.seen))
	}
	for i, dl := range d.seen {
		if dl.IsZero() || dl.Before(start) || dl.After(end.Add(callback.Deadline)) {
			t.Errorf("request %d: deadline %v, want one within %v of the call's start (between %v and %v)", i, dl, callback.Deadline, start, end.Add(callback.Deadline))
		}
	}
}

// ticketID is the ticket id of a created answer.
func ticketID(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		TicketID string `json:"ticket_id"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.TicketID == "" {
		t.Fatalf("no ticket id in %s", body)
	}
	return v.TicketID
}

// slowAnswers is a callback.Store whose answers to Create and ReadTicket
// arrive only once the call's store deadline has passed, as an answer the
// SDK read at the last moment would.
type slowAnswers struct{ callback.Store }

func (s slowAnswers) Create(ctx context.Context, rec idempotency.Record, t ticket.Ticket, out *delivery.Record) (idempotency.Record, bool, error) {
	existing, taken, err := s.Store.Create(context.WithoutCancel(ctx), rec, t, out)
	<-ctx.Done()
	return existing, taken, err
}

func (s slowAnswers) ReadTicket(ctx context.Context, id string) (*ticket.Ticket, *delivery.Record, error) {
	tk, d, err := s.Store.ReadTicket(context.WithoutCancel(ctx), id)
	<-ctx.Done()
	return tk, d, err
}

// TestNothingStoredIsShownPastTheDeadline: a replay or a read whose store
// answer comes after the call's deadline shows nothing of it (the user's
// record it was allowed on is older than that): it answers busy.
func TestNothingStoredIsShownPastTheDeadline(t *testing.T) {
	r := newRig(t)
	first := r.call(create("user-a", "r-1", signIn))
	r.h.Store = slowAnswers{r.store}
	srv := deadlineServer(t, r.h, callback.ResponseReserve+200*time.Millisecond)
	for name, body := range map[string]string{
		"replay": create("user-a", "r-1", signIn),
		"read":   callBody("user-a", "", "get_ticket", `{"ticket_id":"`+first.str("ticket_id")+`"}`),
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+httpapi.CallbackPath, strings.NewReader(body))
		req.Header.Set(protocol.NonceHeader, validNonce(t))
		p := r.do(req)
		if p.status != 200 || p.str("status") != "busy" || strings.Contains(p.raw, first.str("ticket_id")) {
			t.Errorf("%s answered past the deadline: %d %s, want busy", name, p.status, p.raw)
		}
	}
}

// heldCreates is a callback.Store whose Create sends nothing and answers
// busy, as a call whose transaction was held in the network, or in an
// execution environment frozen at its deadline, would answer. release
// sends the held transaction, the same content under the same token, as
// the held request reaching DynamoDB later would.
type heldCreates struct {
	callback.Store
	real *dynamo.Store
	mu   sync.Mutex
	held []func() error
}

func (h *heldCreates) Create(_ context.Context, rec idempotency.Record, t ticket.Ticket, out *delivery.Record) (idempotency.Record, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = append(h.held, func() error {
		_, taken, err := h.real.Create(context.Background(), rec, t, out)
		if taken {
			return errors.New("the held create met a taken key")
		}
		return err
	})
	return idempotency.Record{}, false, fmt.Errorf("%w: held", idempotency.ErrBusy)
}

func (h *heldCreates) release(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, send := range h.held {
		if err := send(); err != nil {
			t.Fatalf("the held create: %v", err)
		}
	}
	h.held = nil
}

// TestALateCreateIsInert: a call reads user-a's record (active), and its
// create transaction is held; the operator disables user-a. The held
// transaction then lands, later than any wait the admin tool could make
// (five minutes, the signed request's window): it commits a ticket and its
// claim, which carry the version of the record the call read. The worker
// never sends it (failed, withheld), and once user-a is enabled again a
// replay of the operation and get_ticket disclose nothing of it. A ticket
// that was queued before the disable is withheld the same way: the record
// cannot tell it from a late one. A ticket made after the enable is
// delivered.
func TestALateCreateIsInert(t *testing.T) {
	r := newOutboxRig(t, delivery.Capabilities{}, 0)
	r.w.Voucher = r.store // as app.Worker wires it
	ctx := context.Background()
	admin := dynamo.NewAdmin(r.env.Client, r.env.Table)

	before := r.call(create("user-a", "r-before", signIn))
	if kind(before) != "created" {
		t.Fatalf("a ticket queued before the disable: %s", before.raw)
	}
	held := &heldCreates{Store: r.store, real: r.store}
	r.h.Store = held
	if p := r.call(create("user-a", "r-late", `{"title":"Held"}`)); p.str("status") != "busy" {
		t.Fatalf("the held call: %d %s, want busy", p.status, p.raw)
	}
	r.h.Store = r.store
	if err := setActive(admin, "user-a", false); err != nil {
		t.Fatal(err)
	}
	r.advance(5*time.Minute + callback.Deadline)
	ticketsBefore := r.tickets()
	held.release(t)
	if n := r.tickets() - ticketsBefore; n != 1 {
		t.Fatalf("the released create wrote %d tickets, want 1 (it is a late write that lands)", n)
	}
	late, err := r.env.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(r.env.Table),
		FilterExpression: aws.String("request_id = :r AND begins_with(pk, :t)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: "r-late"},
			":t": &types.AttributeValueMemberS{Value: "ticket#"}}})
	if err != nil || len(late.Items) != 1 {
		t.Fatalf("the late ticket: %v, %d items", err, len(late.Items))
	}
	var lateID string
	for _, item := range late.Items {
		if pk := item["pk"].(*types.AttributeValueMemberS).Value; strings.HasPrefix(pk, "ticket#") {
			lateID = strings.TrimPrefix(pk, "ticket#")
		}
	}
	for _, id := range []string{before.str("ticket_id"), lateID} {
		rep, err := r.w.Deliver(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != delivery.Failed || rep.Code != delivery.CodeWithheld {
			t.Errorf("ticket %s of the disabled user: %+v, want failed %s", id, rep, delivery.CodeWithheld)
		}
	}
	if n := r.hd.Counts().CreateRequests; n != 0 {
		t.Fatalf("%d create requests reached the helpdesk, want 0", n)
	}

	if err := setActive(admin, "user-a", true); err != nil {
		t.Fatal(err)
	}
	if p := r.call(create("user-a", "r-late", `{"title":"Held"}`)); p.code() != callback.CodeWithdrawn || strings.Contains(p.raw, lateID) {
		t.Errorf("a replay of the late operation after the enable: %d %s, want %s", p.status, p.raw, callback.CodeWithdrawn)
	}
	for _, id := range []string{before.str("ticket_id"), lateID} {
		for _, user := range []string{"user-a", "user-b"} {
			g := r.call(callBody(user, "", "get_ticket", `{"ticket_id":"`+id+`"}`))
			if g.code() != "ticket_not_found" {
				t.Errorf("%s reads withheld ticket %s: %d %s, want ticket_not_found", user, id, g.status, g.raw)
			}
		}
	}
	after := r.call(create("user-a", "r-after", signIn))
	if kind(after) != "created" {
		t.Fatalf("a call after the enable: %s", after.raw)
	}
	if rep, err := r.w.Deliver(ctx, after.str("ticket_id")); err != nil || rep.State != delivery.Delivered {
		t.Fatalf("a ticket made after the enable: %+v %v, want delivered", rep, err)
	}
}
