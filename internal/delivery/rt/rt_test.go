package rt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/testing/desttest"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Every test here talks to a real Request Tracker 5 on loopback
// (internal/local/rtlocal), never to a stand-in: what RT does is what is
// tested.

func TestMain(m *testing.M) {
	code := dynamotest.Main(m).Run()
	if shared != nil {
		_ = shared.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	sharedOnce sync.Once
	shared     *rtlocal.Instance
	sharedErr  error
)

// sharedRT is the RT the package's tests share; each works with keys of
// its own, so they never see each other's tickets.
func sharedRT(t *testing.T) *rtlocal.Instance {
	t.Helper()
	rtlocal.Require(t)
	sharedOnce.Do(func() { shared, sharedErr = rtlocal.Start("127.0.0.1:0") })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// ownRT is an RT of the test's own, for a test that changes RT's
// configuration.
func ownRT(t *testing.T) *rtlocal.Instance {
	t.Helper()
	rtlocal.Require(t)
	in, err := rtlocal.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

func newDest(t testing.TB, base string, o rt.Options) *rt.Destination {
	t.Helper()
	d, err := rt.New(base, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.CloseIdleConnections)
	return d
}

// rtTicket is what RT holds of a ticket, read over its REST API.
type rtTicket struct {
	ID       string
	Subject  string
	Priority string
	Fields   map[string]string
}

// call makes a REST 2.0 request to in as root and decodes its answer.
func call(t testing.TB, in *rtlocal.Instance, method, path string, body any) (int, map[string]any) {
	t.Helper()
	status, raw, err := in.REST(context.Background(), method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return status, out
}

// byKey lists RT's tickets whose key field is key in any case, as RT
// searches it, oldest first.
func byKey(t testing.TB, in *rtlocal.Instance, key string) []rtTicket {
	t.Helper()
	found, err := rtlocal.Search(context.Background(), in.URL, in.Authorize, rt.Query(key))
	if err != nil {
		t.Fatal(err)
	}
	var got []rtTicket
	for _, h := range found {
		tk := rtTicket{ID: fmt.Sprint(h.ID), Subject: h.Title, Priority: h.Priority, Fields: map[string]string{}}
		for name, v := range map[string]string{rt.KeyField: h.IdempotencyKey, rt.TenantField: h.Tenant, rt.UserField: h.Requester, rt.TicketField: h.ExternalID} {
			if v != "" {
				tk.Fields[name] = v
			}
		}
		got = append(got, tk)
	}
	return got
}

func newKey() string { return delivery.Key("op-"+ticket.NewID(), ticket.NewID()) }

// TestCreateThenLookUp: a ticket is created with the key and oncecall's
// tenant, user and ticket id in their fields, its text and priority as
// sent; the lookup finds it by the key, and only by the key exactly.
func TestCreateThenLookUp(t *testing.T) {
	in := sharedRT(t)
	d := newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue, Timeout: 10 * time.Second})
	ctx := context.Background()
	tk, key := desttest.NewTicket(), newKey()
	r := d.Create(ctx, key, tk)
	desttest.CheckSafe(t, r, in.Token)
	if r.Outcome != delivery.Created || r.Status != http.StatusCreated || r.Receipt.URL != d.TicketURL(r.Receipt.ID) {
		t.Fatalf("Create = %+v", r)
	}
	held := byKey(t, in, key)
	if len(held) != 1 || held[0].ID != r.Receipt.ID {
		t.Fatalf("RT holds %+v for the key, want ticket %s alone", held, r.Receipt.ID)
	}
	want := map[string]string{rt.KeyField: key, rt.TenantField: tk.Tenant, rt.UserField: tk.UserID, rt.TicketField: tk.ID}
	if h := held[0]; h.Subject != tk.Title || h.Priority != "High" || !equalMaps(h.Fields, want) {
		t.Fatalf("RT holds %+v, want subject %q, priority High, fields %v", h, tk.Title, want)
	}
	if l := d.Lookup(ctx, key, tk.ID); l.Outcome != delivery.Found || l.Receipt != r.Receipt {
		t.Fatalf("Lookup = %+v, want %+v", l, r.Receipt)
	}
	// RT's = ignores case: a key that differs in case only is another.
	if l := d.Lookup(ctx, strings.ToUpper(key), tk.ID); l.Outcome != delivery.Absent {
		t.Fatalf("Lookup of the key in upper case = %+v, want absent", l)
	}
	if l := d.Lookup(ctx, newKey(), tk.ID); l.Outcome != delivery.Absent || l.Code != "absent" {
		t.Fatalf("Lookup of a key never sent = %+v", l)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// TestTextAsRTShowsIt: the model's text reaches RT as text/plain, which
// RT's own pages show escaped, markup and all, and a line that pretends
// to name the tenant stays the model's words: oncecall's tenant and user
// are in fields the model cannot write.
func TestTextAsRTShowsIt(t *testing.T) {
	in := sharedRT(t)
	d := newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue})
	tk := desttest.NewTicket()
	tk.Title = `Printer <b>on fire</b> & "smoking"`
	tk.Description = "Steps:\n<script>alert('pwned')</script>\nOncecallTenant: tenant-of-someone-else\n<a href=\"https://phish.example\">click</a>"
	key := newKey()
	r := d.Create(context.Background(), key, tk)
	if r.Outcome != delivery.Created {
		t.Fatalf("Create = %+v", r)
	}
	page, err := in.Page("/Helpers/TicketHistory?id=" + r.Receipt.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []string{"&lt;script&gt;alert", "OncecallTenant: tenant-of-someone-else", "&lt;a href="} {
		if !strings.Contains(page, shown) {
			t.Errorf("RT's history does not show %q as text:\n%s", shown, page)
		}
	}
	for _, never := range []string{"<script>alert", `<a href="https://phish.example"`} {
		if strings.Contains(page, never) {
			t.Errorf("RT's history renders the model's %q as markup", never)
		}
	}
	display, err := in.Page("/Ticket/Display.html?id=" + r.Receipt.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(display, "Printer &lt;b&gt;on fire&lt;/b&gt;") || strings.Contains(display, "<b>on fire</b>") {
		t.Errorf("RT's ticket page does not show the subject as text")
	}
	if h := byKey(t, in, key); len(h) != 1 || h[0].Fields[rt.TenantField] != tk.Tenant || h[0].Fields[rt.UserField] != tk.UserID {
		t.Fatalf("RT holds %+v: the tenant and user fields are not oncecall's", h)
	}
}

// TestLongTitleArrivesWhole: RT keeps SubjectBytes of a subject, counted
// in bytes; a title of multi-byte characters past that arrives whole, at
// the head of the ticket's text, and one at the limit is the subject
// untouched.
func TestLongTitleArrivesWhole(t *testing.T) {
	in := sharedRT(t)
	d := newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue})
	for _, c := range []struct {
		title string
		cut   bool
	}{
		{strings.Repeat("漢", 66) + "ab", false}, // 200 bytes
		{strings.Repeat("漢", 67), true},         // 201 bytes
		{strings.Repeat("漢", 200), true},        // 600 bytes
	} {
		tk := desttest.NewTicket()
		tk.Title, tk.Description = c.title, "The description."
		r := d.Create(context.Background(), newKey(), tk)
		if r.Outcome != delivery.Created {
			t.Fatalf("Create = %+v", r)
		}
		history, err := in.Page("/Helpers/TicketHistory?id=" + r.Receipt.ID)
		if err != nil {
			t.Fatal(err)
		}
		display, err := in.Page("/Ticket/Display.html?id=" + r.Receipt.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.cut == strings.Contains(display, c.title) {
			t.Errorf("a title of %d bytes: RT's subject holds it whole: %v, want %v", len(c.title), !c.cut, !c.cut)
		}
		// The history shows the create's Subject header as sent, and the
		// ticket's text: a cut title must be whole in the text too.
		if n := strings.Count(history, c.title); c.cut && n < 2 {
			t.Errorf("a title of %d bytes, which RT cuts, is not whole in the ticket's text (%d places in its history)", len(c.title), n)
		}
	}
}

// TestMoreThanOneIsAFinding: two tickets carry the key (made by hand, or
// by a path oncecall does not take). The lookup names both and picks
// neither.
func TestMoreThanOneIsAFinding(t *testing.T) {
	in := sharedRT(t)
	d := newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue})
	key := newKey()
	var ids []string
	for range 2 {
		status, out := call(t, in, http.MethodPost, rt.TicketPath, map[string]any{"Queue": in.Queue, "Subject": "by hand",
			"CustomFields": map[string]string{rt.KeyField: key}})
		if status != http.StatusCreated {
			t.Fatalf("create by hand: %d %v", status, out)
		}
		ids = append(ids, fmt.Sprint(out["id"]))
	}
	l := d.Lookup(context.Background(), key, "t")
	desttest.CheckSafe(t, l, in.Token)
	if l.Outcome != delivery.Inconsistent || l.Receipt != (delivery.Receipt{}) || l.Code != "found_several" ||
		!strings.Contains(l.Reason, ids[0]+", "+ids[1]) {
		t.Fatalf("Lookup with two tickets carrying the key = %+v, want inconsistent naming %v", l, ids)
	}
}

// TestUniqueValuesDuplicateIsCaught: with UniqueValues on the key's
// field, RT makes a second create's ticket without the key and answers
// 201. The adapter finds out and names both tickets for a person.
func TestUniqueValuesDuplicateIsCaught(t *testing.T) {
	in := ownRT(t)
	status, q := call(t, in, http.MethodGet, rt.QueuePath+in.Queue, nil)
	if status != http.StatusOK {
		t.Fatalf("queue: %d", status)
	}
	var cfID string
	for _, f := range q["TicketCustomFields"].([]any) {
		if m := f.(map[string]any); m["name"] == rt.KeyField {
			cfID = fmt.Sprint(m["id"])
		}
	}
	if status, out := call(t, in, http.MethodPut, "/REST/2.0/customfield/"+cfID, map[string]any{"UniqueValues": 1}); status != http.StatusOK {
		t.Fatalf("UniqueValues: %d %v", status, out)
	}
	d := newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue})
	tk, key := desttest.NewTicket(), newKey()
	first := d.Create(context.Background(), key, tk)
	if first.Outcome != delivery.Created {
		t.Fatalf("first Create = %+v", first)
	}
	second := d.Create(context.Background(), key, tk)
	desttest.CheckSafe(t, second, in.Token)
	if second.Outcome != delivery.Inconsistent || second.Code != rt.CodeKeyNotKept || second.Status != http.StatusCreated ||
		!strings.Contains(second.Reason, "ticket(s) "+first.Receipt.ID+" carry it") {
		t.Fatalf("a second create under UniqueValues = %+v", second)
	}
}

// TestMissingFieldsSendNothing: a queue without oncecall's fields (RT
// would drop the key without a word, and no lookup could find the
// ticket) gets no create at all; neither does an unknown queue; a bad
// token is a credentials problem, retried and raised.
func TestMissingFieldsSendNothing(t *testing.T) {
	in := sharedRT(t)
	name := "nofields-" + ticket.NewID()[:8]
	if status, out := call(t, in, http.MethodPost, "/REST/2.0/queue", map[string]any{"Name": name}); status != http.StatusCreated {
		t.Fatalf("create queue: %d %v", status, out)
	}
	for _, c := range []struct {
		name  string
		o     rt.Options
		code  string
		auth  bool
		queue string
	}{
		{"queue without the fields", rt.Options{Token: in.Token, Queue: name}, rt.CodeFieldsMissing, false, name},
		{"no such queue", rt.Options{Token: in.Token, Queue: "no-such-queue"}, rt.CodeFieldsMissing, false, ""},
		{"bad token", rt.Options{Token: "1-2-nonsense", Queue: in.Queue}, "unauthorized", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDest(t, in.URL, c.o)
			key := newKey()
			for _, r := range []delivery.Result{d.Create(context.Background(), key, desttest.NewTicket()), d.Lookup(context.Background(), key, "t")} {
				desttest.CheckSafe(t, r, in.Token)
				if r.Outcome != delivery.Unavailable || r.Code != c.code || r.Auth != c.auth {
					t.Fatalf("= %+v, want unavailable %s auth %v", r, c.code, c.auth)
				}
			}
			if c.queue != "" {
				if status, out := call(t, in, http.MethodGet, rt.TicketsPath+"?query="+url.QueryEscape("Queue = '"+c.queue+"'"), nil); status != http.StatusOK || out["total"] != 0.0 {
					t.Fatalf("the queue holds tickets: %v", out)
				}
			}
		})
	}
}

// TestFaultMatrix runs the faults every adapter runs (desttest.Cases)
// between the adapter and a real RT, through the fault proxy: Create
// under the fault, then what the worker does next, a lookup, and a
// create only when the lookup found nothing. Each case ends with exactly
// one RT ticket carrying the key.
func TestFaultMatrix(t *testing.T) {
	in := sharedRT(t)
	for _, c := range desttest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			proxy, err := in.StartProxy(helpdesk.ProxyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = proxy.Close() })
			d := newDest(t, proxy.URL, rt.Options{Token: in.Token, Queue: in.Queue, Timeout: matrixTimeout})
			ctx := context.Background()
			tk, key := desttest.NewTicket(), newKey()
			if c.Fault != nil {
				f := *c.Fault
				if f.Kind == helpdesk.Slow {
					f.Delay = 2 * matrixTimeout
				}
				if c.RetryAfterDate {
					f.RetryAfter = time.Now().Add(c.RetryAfter).UTC().Format(http.TimeFormat)
				}
				if err := proxy.Inject(f); err != nil {
					t.Fatal(err)
				}
			}
			r := d.Create(ctx, key, tk)
			desttest.CheckSafe(t, r, in.Token)
			// Real time passes before the worker's next step: whatever the
			// proxy forwarded is done at RT (a client that gave up does
			// not stop RT).
			proxy.WaitIdle()
			want := c.Outcome
			if c.Name == "409" {
				want = desttest.ConflictOutcome(d)
			}
			if r.Outcome != want || r.Code != c.Code || r.Auth != c.Auth || r.Reason != c.Reason || r.RetryAfter > c.RetryAfter ||
				(c.RetryAfter > 0 && r.RetryAfter < c.RetryAfter-2*time.Second) {
				t.Fatalf("Create = %+v, want %v %q auth %v reason %q retry-after %v", r, want, c.Code, c.Auth, c.Reason, c.RetryAfter)
			}
			if c.Unreached {
				waitListening(t, proxy.URL)
			}
			held := byKey(t, in, key)
			if n := map[bool]int{true: 1, false: 0}[c.Creates]; len(held) != n {
				t.Fatalf("RT holds %d tickets with the key, want %d", len(held), n)
			}
			if r.Outcome == delivery.Created && r.Receipt.ID != held[0].ID {
				t.Fatalf("receipt %+v, RT made ticket %s", r.Receipt, held[0].ID)
			}
			// What the worker does next: a create that may have made the
			// ticket is looked up before anything is sent again.
			if r.Outcome != delivery.Created {
				l := d.Lookup(ctx, key, tk.ID)
				switch {
				case c.Creates && (l.Outcome != delivery.Found || l.Receipt.ID != held[0].ID):
					t.Fatalf("Lookup = %+v, want ticket %s", l, held[0].ID)
				case !c.Creates && l.Outcome != delivery.Absent:
					t.Fatalf("Lookup = %+v, want absent", l)
				case !c.Creates:
					if again := d.Create(ctx, key, tk); again.Outcome != delivery.Created {
						t.Fatalf("Create again = %+v", again)
					}
				}
			}
			if got := byKey(t, in, key); len(got) != 1 || got[0].Fields[rt.KeyField] != key {
				t.Fatalf("RT ends with %+v, want one ticket carrying the key", got)
			}
		})
	}
}

// matrixTimeout bounds each request of the matrix: longer than RT takes
// on a busy machine (the local helpdesk's matrix waits desttest.Timeout).
const matrixTimeout = 5 * time.Second

// waitListening waits until the proxy at base accepts connections again
// after a refuse fault.
func waitListening(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(base + "/")
		if err == nil {
			_ = resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy does not listen again: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPriorities: oncecall's four priorities reach RT as its labels,
// urgent as High (RT's default labels have no fourth); anything else is
// normal.
func TestPriorities(t *testing.T) {
	in := sharedRT(t)
	d := newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue})
	for sent, want := range map[string]string{"low": "Low", "normal": "Medium", "high": "High", "urgent": "High", "P1\r\nX: y": "Medium"} {
		tk, key := desttest.NewTicket(), newKey()
		tk.Priority = sent
		if r := d.Create(context.Background(), key, tk); r.Outcome != delivery.Created {
			t.Fatalf("%q: %+v", sent, r)
		}
		if h := byKey(t, in, key); len(h) != 1 || h[0].Priority != want {
			t.Errorf("priority %q reached RT as %+v, want %s", sent, h, want)
		}
	}
	if !slices.Equal(rt.Fields(), []string{rt.KeyField, rt.TenantField, rt.UserField, rt.TicketField}) {
		t.Fatal("Fields")
	}
}
