package desttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Timings of the matrix.
const (
	// Timeout bounds each request of the adapter under test.
	Timeout = time.Second
	// SlowDelay is how late the Slow fault answers: well past Timeout.
	SlowDelay = 5 * time.Second
	// Lag is the lookup lag of the combinations that have one. The
	// helpdesk's clock stands still in the matrix (Clock), so a lookup
	// falls inside the lag, or past it, by the test's choice alone.
	Lag = 150 * time.Millisecond
	// RefuseFor is how long the Refuse fault keeps connections refused.
	RefuseFor = 200 * time.Millisecond
)

// Destination is an adapter under test.
type Destination interface {
	delivery.Destination
	CloseIdleConnections()
}

// Adapter says how to build the destination under test.
type Adapter struct {
	// New returns the destination for hd, each request bounded by timeout.
	New func(t testing.TB, hd *helpdesk.Server, timeout time.Duration) Destination
	// Options are the helpdesk's credentials for it; Capabilities are set
	// by the matrix.
	Options helpdesk.Options
	// Secrets must never appear in a Result's Code.
	Secrets []string
}

// Combinations are the helpdesk capabilities the matrix runs under.
var Combinations = []delivery.Capabilities{
	{},
	{DedupWindow: 2 * time.Hour},
	{Lookup: true},
	{Lookup: true, SettleDelay: Lag},
	{DedupWindow: 2 * time.Hour, Lookup: true},
	{DedupWindow: 2 * time.Hour, Lookup: true, SettleDelay: Lag},
}

// Case is one fault and what Create must report under it.
type Case struct {
	Name  string
	Fault *helpdesk.Fault
	// Outcome and Code of Create; for a 409 the outcome depends on whether
	// the adapter declares deduplication (ConflictOutcome).
	Outcome delivery.Outcome
	Code    string
	Auth    bool
	Reason  string
	// RetryAfter is the least wait expected (a date loses up to a second).
	RetryAfter time.Duration
	// RetryAfterDate sets the fault's Retry-After, just before the
	// request, to an HTTP date RetryAfter from now.
	RetryAfterDate bool
	// Creates says whether the helpdesk holds a ticket after the request.
	Creates bool
	// Unreached is true when no request reaches the helpdesk.
	Unreached bool
}

// Cases are every fault kind, and the statuses the rules single out.
func Cases() []Case {
	f := func(k helpdesk.FaultKind) *helpdesk.Fault { return &helpdesk.Fault{Kind: k} }
	st := func(k helpdesk.FaultKind, status int, body string) *helpdesk.Fault {
		return &helpdesk.Fault{Kind: k, Status: status, Body: body}
	}
	return []Case{
		{Name: "no fault", Outcome: delivery.Created, Code: "created", Creates: true},
		{Name: "answer lost after creating", Fault: f(helpdesk.LoseAnswer), Outcome: delivery.Ambiguous, Code: "connection_closed", Creates: true},
		{Name: "5xx without creating", Fault: f(helpdesk.FailBefore), Outcome: delivery.Ambiguous, Code: "http_503"},
		{Name: "5xx with Retry-After", Fault: &helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 503, RetryAfter: "4"},
			Outcome: delivery.Ambiguous, Code: "http_503", RetryAfter: 4 * time.Second},
		{Name: "5xx after creating", Fault: f(helpdesk.FailAfter), Outcome: delivery.Ambiguous, Code: "http_500", Creates: true},
		{Name: "429 with Retry-After seconds", Fault: &helpdesk.Fault{Kind: helpdesk.RateLimit, RetryAfter: "3"},
			Outcome: delivery.Unavailable, Code: "http_429", RetryAfter: 3 * time.Second},
		{Name: "429 with Retry-After date", Fault: &helpdesk.Fault{Kind: helpdesk.RateLimit}, RetryAfterDate: true,
			Outcome: delivery.Unavailable, Code: "http_429", RetryAfter: 30 * time.Second},
		{Name: "slow past the timeout", Fault: &helpdesk.Fault{Kind: helpdesk.Slow, Delay: SlowDelay},
			Outcome: delivery.Ambiguous, Code: "timeout", Creates: true},
		{Name: "reset before creating", Fault: f(helpdesk.ResetBefore), Outcome: delivery.Ambiguous, Code: "reset"},
		{Name: "connection refused", Fault: &helpdesk.Fault{Kind: helpdesk.Refuse, For: RefuseFor},
			Outcome: delivery.Unavailable, Code: "connection_refused", Unreached: true},
		{Name: "401", Fault: st(helpdesk.FailBefore, 401, ""), Outcome: delivery.Unavailable, Code: "unauthorized", Auth: true},
		{Name: "403", Fault: st(helpdesk.FailBefore, 403, ""), Outcome: delivery.Unavailable, Code: "forbidden", Auth: true},
		{Name: "400", Fault: st(helpdesk.FailBefore, 400, "the title is\n too long"), Outcome: delivery.Refused, Code: "http_400",
			Reason: "the title is too long"},
		{Name: "422", Fault: st(helpdesk.FailBefore, 422, "priority unknown"), Outcome: delivery.Refused, Code: "http_422",
			Reason: "priority unknown"},
		{Name: "408", Fault: st(helpdesk.FailBefore, 408, ""), Outcome: delivery.Ambiguous, Code: "http_408"},
		{Name: "409", Fault: st(helpdesk.FailBefore, 409, ""), Code: "http_409"},
		{Name: "200 without an id", Fault: st(helpdesk.FailAfter, 200, "{}"), Outcome: delivery.Ambiguous, Code: "no_id", Creates: true},
	}
}

// NewTicket returns a ticket as the callback makes them.
func NewTicket() ticket.Ticket {
	return ticket.Ticket{ID: ticket.NewID(), Tenant: "tenant-secret-a", UserID: "user-secret-a",
		Title: "Cannot sign in SECRET-TITLE", Description: "Steps SECRET-DESCRIPTION", Priority: "high",
		Tags: []string{"auth", "login"}, CreatedAt: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)}
}

// Start starts a helpdesk for the duration of the test.
func Start(t testing.TB, o helpdesk.Options) *helpdesk.Server {
	t.Helper()
	hd, err := helpdesk.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	return hd
}

var codePattern = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)

// CheckSafe fails t when r's Code could quote anything secret or a
// destination's words, or a Reason is where it must not be.
func CheckSafe(t testing.TB, r delivery.Result, secrets ...string) {
	t.Helper()
	if !codePattern.MatchString(r.Code) {
		t.Errorf("Code %q is not from the fixed vocabulary", r.Code)
	}
	tk := NewTicket()
	for _, s := range append(secrets, tk.Tenant, tk.UserID, "SECRET") {
		if s != "" && strings.Contains(strings.ToLower(r.Code), strings.ToLower(s)) {
			t.Errorf("Code %q quotes %q", r.Code, s)
		}
	}
	if r.Reason != "" && r.Outcome != delivery.Refused && r.Outcome != delivery.Inconsistent {
		t.Errorf("Reason %q on a %v result", r.Reason, r.Outcome)
	}
	if len(r.Reason) > delivery.MaxReason {
		t.Errorf("Reason of %d bytes", len(r.Reason))
	}
}

// RunMatrix runs every Case under every Combination: Create under the
// fault, then (when the helpdesk looks up) Lookup, then Create again with
// the same key, checking each Result against the helpdesk's tickets and
// counts.
func RunMatrix(t *testing.T, a Adapter) {
	for _, caps := range Combinations {
		for _, c := range Cases() {
			name := fmt.Sprintf("dedup=%v,lookup=%v,lag=%v/%s", caps.DedupWindow > 0, caps.Lookup, caps.SettleDelay > 0, c.Name)
			t.Run(name, func(t *testing.T) {
				// Refuse gives its port back for a while: run it alone, so
				// that no other helpdesk of this test can take the port.
				if !c.Unreached {
					t.Parallel()
				}
				runCase(t, a, caps, c)
			})
		}
	}
}

// Clock is a clock that moves only when told: the helpdesk's in the
// matrix, so that a ticket's lag ends when the test says, however slow the
// machine.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func runCase(t *testing.T, a Adapter, caps delivery.Capabilities, c Case) {
	o := a.Options
	o.Capabilities = caps
	clock := NewClock(time.Now())
	o.Now = clock.Now
	hd := Start(t, o)
	d := a.New(t, hd, Timeout)
	defer d.CloseIdleConnections()
	ctx := context.Background()
	tk, key := NewTicket(), "key-"+ticket.NewID()
	minWait := c.RetryAfter
	if c.Fault != nil {
		f := *c.Fault
		if c.RetryAfterDate {
			f.RetryAfter = time.Now().Add(c.RetryAfter).UTC().Format(http.TimeFormat)
			minWait -= 2 * time.Second // the date's precision, and the time the request takes
		}
		if err := hd.Inject(f); err != nil {
			t.Fatal(err)
		}
	}

	r := d.Create(ctx, key, tk)
	CheckSafe(t, r, a.Secrets...)
	want := c.Outcome
	if c.Name == "409" {
		want = ConflictOutcome(d)
	}
	if r.Outcome != want || r.Code != c.Code || r.Auth != c.Auth || r.Reason != c.Reason ||
		r.RetryAfter < minWait || r.RetryAfter > c.RetryAfter {
		t.Fatalf("Create = %+v, want %v %q auth %v reason %q retry-after %v", r, want, c.Code, c.Auth, c.Reason, c.RetryAfter)
	}
	held := hd.TicketsByExternalID(tk.ID)
	if wantHeld := map[bool]int{true: 1, false: 0}[c.Creates]; len(held) != wantHeld {
		t.Fatalf("the helpdesk holds %d tickets, want %d", len(held), wantHeld)
	}
	reached := map[bool]int{true: 0, false: 1}[c.Unreached]
	if got := hd.Counts().CreateRequests; got != reached {
		t.Fatalf("%d create requests reached the helpdesk, want %d (a re-send by the transport?)", got, reached)
	}
	if r.Outcome == delivery.Created && (r.Receipt.ID != fmt.Sprint(held[0].ID) || r.Receipt.URL == "") {
		t.Fatalf("receipt %+v for ticket %d", r.Receipt, held[0].ID)
	}
	if c.Unreached {
		WaitListening(t, hd)
	}

	if d.Capabilities().Lookup {
		checkLookup(t, d, hd, clock, caps, key, tk.ID, held)
	}

	// Sending again, with the same key, after any outcome.
	again := d.Create(ctx, key, tk)
	CheckSafe(t, again, a.Secrets...)
	if again.Outcome != delivery.Created {
		t.Fatalf("Create again = %+v", again)
	}
	after := hd.TicketsByExternalID(tk.ID)
	switch {
	case caps.DedupWindow > 0 && len(held) == 1:
		if len(after) != 1 || again.Receipt.ID != fmt.Sprint(held[0].ID) || again.Code != "replayed" {
			t.Fatalf("a deduplicating helpdesk: %d tickets, receipt %+v code %q; want the first ticket %d",
				len(after), again.Receipt, again.Code, held[0].ID)
		}
	case len(after) != len(held)+1 || again.Code != "created":
		t.Fatalf("%d tickets after sending again (was %d), code %q", len(after), len(held), again.Code)
	}
	keys := hd.KeyRequests()
	if len(keys) != 1 || keys[key] != reached+1 {
		t.Fatalf("idempotency keys seen: %v; want only this ticket's, %d times", keys, reached+1)
	}
}

// checkLookup looks the ticket up as the worker would after an ambiguous
// create, and checks the answer against what the helpdesk holds. The
// helpdesk's clock has not moved since it made the ticket: a lag hides it
// from the first lookup, and the clock moved past the lag shows it.
func checkLookup(t *testing.T, d Destination, hd *helpdesk.Server, clock *Clock, caps delivery.Capabilities, key, externalID string, held []helpdesk.Ticket) {
	t.Helper()
	ctx := context.Background()
	r := d.Lookup(ctx, key, externalID)
	CheckSafe(t, r)
	switch {
	case !caps.Lookup:
		if r.Outcome != delivery.Unavailable || r.Code != "http_404" {
			t.Fatalf("Lookup on a helpdesk without lookups = %+v", r)
		}
		return
	case caps.SettleDelay > 0:
		// Inside the lag the ticket is not visible yet: the reason a miss
		// is trusted only after the settle delay.
		if r.Outcome != delivery.Absent {
			t.Fatalf("Lookup inside the lag = %+v", r)
		}
		clock.Advance(caps.SettleDelay)
		r = d.Lookup(ctx, key, externalID)
	}
	if len(held) == 0 {
		if r.Outcome != delivery.Absent || r.Code != "absent" {
			t.Fatalf("Lookup of a ticket never created = %+v", r)
		}
		return
	}
	if r.Outcome != delivery.Found || r.Receipt.ID != fmt.Sprint(held[0].ID) || r.Receipt.URL == "" {
		t.Fatalf("Lookup = %+v, want ticket %d", r, held[0].ID)
	}
	if got := hd.Counts().LookupRequests; got < 1 {
		t.Fatalf("lookup requests %d", got)
	}
}

// ConflictOutcome is what a 409 means for d: the first request's outcome
// will be returned to a later retry only if d deduplicates.
func ConflictOutcome(d delivery.Destination) delivery.Outcome {
	if d.Capabilities().DedupWindow > 0 {
		return delivery.Unavailable
	}
	return delivery.Ambiguous
}

// WaitListening waits until hd accepts connections again after Refuse.
func WaitListening(t testing.TB, hd *helpdesk.Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", hd.Addr())
		if err == nil {
			_ = c.Close()
			return
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			t.Fatalf("the helpdesk does not listen again: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CheckForgedPriorityAndTags creates through d, at hd, tickets whose
// priority is none of the four (create_ticket's schema refuses it, but a
// ticket item can be written another way) and whose tags name what
// triggers key on: the helpdesk must receive the default priority, never
// the forged words, and only namespaced tags; the four priorities pass as
// they are.
func CheckForgedPriorityAndTags(t *testing.T, hd *helpdesk.Server, d delivery.Destination) {
	t.Helper()
	for i, tc := range []struct{ sent, received string }{
		{"urgent\r\nX-Escalate: page-the-ceo", "normal"},
		{"P1", "normal"},
		{"URGENT", "normal"},
		{" high", "normal"},
		{"", "normal"},
		{"low", "low"}, {"normal", "normal"}, {"high", "high"}, {"urgent", "urgent"},
	} {
		tk := NewTicket()
		tk.ID = fmt.Sprintf("%s%02d", tk.ID[:len(tk.ID)-2], i)
		tk.Priority = tc.sent
		tk.Tags = []string{"vip", "sla_breach", "priority_urgent"}
		if r := d.Create(context.Background(), fmt.Sprintf("k%d", i), tk); r.Outcome != delivery.Created {
			t.Fatalf("priority %q: Create = %+v", tc.sent, r)
		}
		got := hd.TicketsByExternalID(tk.ID)
		if len(got) != 1 {
			t.Fatalf("priority %q: %d tickets at the helpdesk", tc.sent, len(got))
		}
		if got[0].Priority != tc.received {
			t.Errorf("priority %q reached the helpdesk as %q, want %q", tc.sent, got[0].Priority, tc.received)
		}
		for _, tag := range got[0].Tags {
			if !strings.HasPrefix(tag, delivery.ModelTagPrefix) && tag != "oncecall" {
				t.Errorf("tag %q reached the helpdesk without the model's namespace", tag)
			}
		}
	}
}
