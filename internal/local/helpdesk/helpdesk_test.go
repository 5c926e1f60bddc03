package helpdesk_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// TestMain fails the package when a goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable time for windows and lags.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func start(t *testing.T, o helpdesk.Options) *helpdesk.Server {
	t.Helper()
	s, err := helpdesk.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// client never reuses connections, so that every request is its own.
func client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func try(t *testing.T, c *http.Client, method, url, body string, header ...string) (reply, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r, nil
}

// do is try for a request that must get an answer.
func do(t *testing.T, c *http.Client, method, url, body string, header ...string) reply {
	t.Helper()
	r, err := try(t, c, method, url, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func webhookBody(externalID, title string) string {
	return fmt.Sprintf(`{"external_id":%q,"tenant_id":"tenant-a","requester":"user-a","title":%q,"description":"d","priority":"high","tags":["auth"],"created_at":"2026-01-01T00:00:00Z"}`, externalID, title)
}

func zendeskBody(externalID, subject string) string {
	return fmt.Sprintf(`{"ticket":{"subject":%q,"comment":{"body":"it broke"},"priority":"urgent","tags":["oncecall"],"external_id":%q}}`, subject, externalID)
}

var dedup = delivery.Capabilities{DedupWindow: 2 * time.Hour, Lookup: true}

func TestWebhookCreateDedupAndConflict(t *testing.T) {
	s := start(t, helpdesk.Options{Capabilities: dedup})
	c := client(5 * time.Second)
	first := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
	if first.status != 201 || first.body["id"] != "1" || first.header.Get("X-Idempotency-Lookup") != "miss" {
		t.Fatalf("first create = %d %v %v", first.status, first.body, first.header)
	}
	// The same payload with members reordered is the same request.
	reordered := `{"tags":["auth"],"title":"T","external_id":"x-1","tenant_id":"tenant-a","requester":"user-a","description":"d","priority":"high","created_at":"2026-01-01T00:00:00Z"}`
	again := do(t, c, "POST", s.WebhookURL(), reordered, "Idempotency-Key", "k1")
	if again.status != 201 || again.body["id"] != "1" || again.header.Get("X-Idempotency-Lookup") != "hit" {
		t.Fatalf("replay = %d %v %v", again.status, again.body, again.header)
	}
	other := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "other title"), "Idempotency-Key", "k1")
	if other.status != 422 || other.body["error"] != "idempotency_key_reused" {
		t.Fatalf("reused key = %d %v", other.status, other.body)
	}
	if n := len(s.Tickets()); n != 1 {
		t.Fatalf("%d tickets", n)
	}
	tk := s.Tickets()[0]
	if tk.ExternalID != "x-1" || tk.IdempotencyKey != "k1" || tk.KeyRequests != 3 || tk.Via != helpdesk.ViaWebhook ||
		tk.Tenant != "tenant-a" || tk.Requester != "user-a" || tk.Priority != "high" || tk.Tags[0] != "auth" {
		t.Fatalf("ticket = %+v", tk)
	}
	if got := s.Counts(); got.CreateRequests != 3 || got.Creations != 1 || got.Replays != 1 {
		t.Fatalf("counts = %+v", got)
	}
	show := do(t, c, "GET", s.WebhookURL()+"/1", "")
	if show.status != 200 || show.body["external_id"] != "x-1" {
		t.Fatalf("show = %d %v", show.status, show.raw)
	}
	agent := do(t, c, "GET", tk.URL, "")
	if agent.status != 200 || !strings.Contains(agent.raw, "Ticket #1") {
		t.Fatalf("agent view = %d %q", agent.status, agent.raw)
	}
}

func TestWithoutDedupEveryCreateMakesATicket(t *testing.T) {
	s := start(t, helpdesk.Options{})
	c := client(5 * time.Second)
	for range 3 {
		r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
		if r.status != 201 || r.header.Get("X-Idempotency-Lookup") != "" {
			t.Fatalf("create = %d %v", r.status, r.header)
		}
	}
	if n := len(s.Tickets()); n != 3 || s.KeyRequests()["k1"] != 3 {
		t.Fatalf("%d tickets, keys %v", n, s.KeyRequests())
	}
	if r := do(t, c, "GET", s.WebhookURL()+"?external_id=x-1", ""); r.status != 404 {
		t.Fatalf("lookup without the capability = %d", r.status)
	}
}

func TestWebhookRefusals(t *testing.T) {
	s := start(t, helpdesk.Options{Capabilities: dedup, Token: "s3cret"})
	c := client(5 * time.Second)
	auth := []string{"Authorization", "Bearer s3cret", "Idempotency-Key", "k"}
	for _, tc := range []struct {
		body   string
		header []string
		status int
	}{
		{webhookBody("x", "T"), []string{"Idempotency-Key", "k"}, 401},
		{webhookBody("x", "T"), []string{"Authorization", "Bearer wrong", "Idempotency-Key", "k"}, 401},
		{`not json`, auth, 400},
		{`{"external_id":"x","title":"T","extra":1}`, auth, 400},
		{`{"external_id":"","title":"T"}`, auth, 422},
		{`{"external_id":"x","title":" "}`, auth, 422},
		{`{"external_id":"x","title":"T","priority":"asap"}`, auth, 422},
		{webhookBody("x", "T"), []string{"Authorization", "Bearer s3cret", "Idempotency-Key", strings.Repeat("k", 256)}, 400},
		{`{"external_id":"x","title":"` + strings.Repeat("a", helpdesk.MaxRequestBytes) + `"}`, auth, 413},
	} {
		if r := do(t, c, "POST", s.WebhookURL(), tc.body, tc.header...); r.status != tc.status {
			t.Errorf("create with %v = %d %s, want %d", tc.header, r.status, r.raw, tc.status)
		}
	}
	if n := len(s.Tickets()); n != 0 {
		t.Fatalf("%d tickets after refusals", n)
	}
	if got := s.Counts(); got.Unauthorized != 2 {
		t.Errorf("counts = %+v", got)
	}
}

func TestZendeskShape(t *testing.T) {
	s := start(t, helpdesk.Options{Capabilities: dedup, ZendeskEmail: "agent@example.com", ZendeskAPIToken: "tok", ZendeskOAuthToken: "oauth"})
	c := client(5 * time.Second)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("agent@example.com/token:tok"))
	url := s.URL() + "/api/v2/tickets.json"
	r := do(t, c, "POST", url, zendeskBody("x-1", "S"), "Authorization", basic, "Idempotency-Key", "k1")
	tk, _ := r.body["ticket"].(map[string]any)
	if r.status != 201 || tk["id"] != float64(1) || tk["external_id"] != "x-1" || r.header.Get("X-Idempotency-Lookup") != "miss" ||
		!strings.HasSuffix(r.header.Get("Location"), "/api/v2/tickets/1.json") {
		t.Fatalf("create = %d %s %v", r.status, r.raw, r.header)
	}
	r = do(t, c, "POST", s.URL()+"/api/v2/tickets", zendeskBody("x-1", "S"), "Authorization", "Bearer oauth", "Idempotency-Key", "k1")
	if tk, _ := r.body["ticket"].(map[string]any); r.status != 201 || tk["id"] != float64(1) || r.header.Get("X-Idempotency-Lookup") != "hit" {
		t.Fatalf("replay = %d %s %v", r.status, r.raw, r.header)
	}
	r = do(t, c, "POST", url, zendeskBody("x-1", "changed"), "Authorization", basic, "Idempotency-Key", "k1")
	if r.status != 400 || r.body["error"] != "IdempotentRequestError" {
		t.Fatalf("reused key = %d %s", r.status, r.raw)
	}
	for _, bad := range []struct{ body, auth string }{
		{zendeskBody("x-2", "S"), "Basic " + base64.StdEncoding.EncodeToString([]byte("agent@example.com/token:nope"))},
		{zendeskBody("x-2", "S"), "Bearer nope"},
		{zendeskBody("x-2", "S"), ""},
	} {
		if r := do(t, c, "POST", url, bad.body, "Authorization", bad.auth); r.status != 401 {
			t.Errorf("create with %q = %d", bad.auth, r.status)
		}
	}
	for _, bad := range []string{`{"ticket":{"subject":"S"}}`, `{"ticket":{"comment":{"body":"b"},"priority":"p9"}}`} {
		if r := do(t, c, "POST", url, bad, "Authorization", basic); r.status != 422 || r.body["description"] == nil {
			t.Errorf("create %s = %d %s", bad, r.status, r.raw)
		}
	}
	if r := do(t, c, "POST", url, `{"nothing":1}`, "Authorization", basic); r.status != 400 {
		t.Errorf("create without a ticket = %d", r.status)
	}
	r = do(t, c, "GET", url+"?external_id=x-1", "", "Authorization", basic)
	list, _ := r.body["tickets"].([]any)
	if r.status != 200 || len(list) != 1 || list[0].(map[string]any)["subject"] != "S" {
		t.Fatalf("list = %d %s", r.status, r.raw)
	}
	r = do(t, c, "GET", s.URL()+"/api/v2/tickets/1.json", "", "Authorization", "Bearer oauth")
	if r.status != 200 {
		t.Fatalf("show = %d %s", r.status, r.raw)
	}
	if got := s.Tickets()[0]; got.Via != helpdesk.ViaZendesk || got.Title != "S" || got.Description != "it broke" || got.KeyRequests != 3 {
		t.Fatalf("ticket = %+v", got)
	}
}

func TestDedupWindowAndLookupLag(t *testing.T) {
	clk := newClock()
	s := start(t, helpdesk.Options{Now: clk.now, Capabilities: delivery.Capabilities{
		DedupWindow: time.Hour, Lookup: true, SettleDelay: 30 * time.Second}})
	c := client(5 * time.Second)
	lookup := func() int {
		r := do(t, c, "GET", s.WebhookURL()+"?external_id=x-1", "")
		list, _ := r.body["tickets"].([]any)
		if r.status != 200 {
			t.Fatalf("lookup = %d", r.status)
		}
		return len(list)
	}
	do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
	if n := lookup(); n != 0 {
		t.Fatalf("a new ticket is visible at once: %d", n)
	}
	clk.advance(30 * time.Second)
	if n := lookup(); n != 1 {
		t.Fatalf("lookup after the lag finds %d", n)
	}
	clk.advance(59 * time.Minute)
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.body["id"] != "1" {
		t.Fatalf("inside the window: %v", r.body)
	}
	clk.advance(time.Minute)
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.body["id"] != "2" {
		t.Fatalf("past the window: %v", r.body)
	}
	if err := s.SetCapabilities(delivery.Capabilities{DedupWindow: -1}); err == nil {
		t.Fatal("a negative window was accepted")
	}
}

func TestConcurrentCreatesWithOneKey(t *testing.T) {
	s := start(t, helpdesk.Options{Capabilities: dedup})
	c := client(5 * time.Second)
	var wg sync.WaitGroup
	ids := make(chan any, 20)
	for range 20 {
		wg.Go(func() {
			r, err := try(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
			if err != nil || r.status != 201 {
				t.Errorf("create = %v %d", err, r.status)
			}
			ids <- r.body["id"]
		})
	}
	wg.Wait()
	close(ids)
	for id := range ids {
		if id != "1" {
			t.Errorf("a concurrent create got ticket %v", id)
		}
	}
	if n := len(s.Tickets()); n != 1 || s.KeyRequests()["k1"] != 20 {
		t.Fatalf("%d tickets, %v", n, s.KeyRequests())
	}
}

func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   helpdesk.Fault
		status  int    // 0: no answer
		errLike string // with no answer
		tickets int
	}{
		{"lose answer", helpdesk.Fault{Kind: helpdesk.LoseAnswer}, 0, "EOF", 1},
		{"5xx before", helpdesk.Fault{Kind: helpdesk.FailBefore}, 503, "", 0},
		{"403 before", helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 403}, 403, "", 0},
		{"5xx after", helpdesk.Fault{Kind: helpdesk.FailAfter}, 500, "", 1},
		{"200 without id after", helpdesk.Fault{Kind: helpdesk.FailAfter, Status: 200, Body: "ok"}, 200, "", 1},
		{"rate limit", helpdesk.Fault{Kind: helpdesk.RateLimit, RetryAfter: "7"}, 429, "", 0},
		{"slow", helpdesk.Fault{Kind: helpdesk.Slow, Delay: 5 * time.Second}, 0, "Timeout", 1},
		{"reset before", helpdesk.Fault{Kind: helpdesk.ResetBefore}, 0, "reset", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, helpdesk.Options{Capabilities: dedup})
			if err := s.Inject(tc.fault); err != nil {
				t.Fatal(err)
			}
			c := client(300 * time.Millisecond)
			r, err := try(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
			switch {
			case tc.status == 0 && (err == nil || !strings.Contains(err.Error(), tc.errLike)):
				t.Fatalf("create = %d, %v; want an error like %q", r.status, err, tc.errLike)
			case tc.status != 0 && (err != nil || r.status != tc.status):
				t.Fatalf("create = %d, %v; want %d", r.status, err, tc.status)
			}
			if tc.fault.Kind == helpdesk.RateLimit && r.header.Get("Retry-After") != "7" {
				t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
			}
			if n := len(s.Tickets()); n != tc.tickets {
				t.Errorf("%d tickets, want %d", n, tc.tickets)
			}
			if got := s.Counts(); got.Faults != 1 || got.CreateRequests != 1 {
				t.Errorf("counts = %+v", got)
			}
			// The fault was for one request: the next is answered.
			r = do(t, client(5*time.Second), "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
			if r.status != 201 || r.body["id"] != "1" && tc.tickets == 1 {
				t.Errorf("the next create = %d %v", r.status, r.body)
			}
		})
	}
}

func TestFaultsByOperationAndCount(t *testing.T) {
	s := start(t, helpdesk.Options{Capabilities: dedup})
	c := client(5 * time.Second)
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.FailBefore, Op: helpdesk.Lookup, Count: 2, Status: 502}); err != nil {
		t.Fatal(err)
	}
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.FailAfter, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 500 {
		t.Fatalf("create = %d", r.status)
	}
	for i := range 3 {
		r := do(t, c, "GET", s.WebhookURL()+"?external_id=x-1", "")
		if want := map[bool]int{true: 502, false: 200}[i < 2]; r.status != want {
			t.Fatalf("lookup %d = %d, want %d", i, r.status, want)
		}
	}
	if f := s.Faults(); len(f) != 0 {
		t.Fatalf("faults left: %+v", f)
	}
	for _, bad := range []helpdesk.Fault{
		{Kind: "explode"}, {Kind: helpdesk.Slow, Op: "delete"}, {Kind: helpdesk.Slow, Count: -1},
		{Kind: helpdesk.FailBefore, Status: 99}, {Kind: helpdesk.Slow, Delay: time.Hour},
	} {
		if err := s.Inject(bad); err == nil {
			t.Errorf("Inject(%+v) accepted", bad)
		}
	}
	// Lookup faults apply to the Zendesk front too: both share the queue.
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.LoseAnswer, Op: helpdesk.Lookup}); err != nil {
		t.Fatal(err)
	}
	if _, err := try(t, c, "GET", s.URL()+"/api/v2/tickets.json?external_id=x-1", ""); err == nil {
		t.Fatal("lookup answered despite lose_answer")
	}
}

func TestRefuse(t *testing.T) {
	s := start(t, helpdesk.Options{Capabilities: dedup})
	// A client holding a kept-alive connection must be refused too.
	keep := &http.Client{Timeout: 2 * time.Second}
	defer keep.CloseIdleConnections()
	if r := do(t, keep, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 201 {
		t.Fatal(r.status)
	}
	// Refused for a minute, which no check below outlasts however slow
	// the machine, then ended.
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Refuse, For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Refuse}); err == nil {
		t.Error("a second refuse while refusing was accepted")
	}
	time.Sleep(50 * time.Millisecond) // the client notices its idle connection closed
	_, err := try(t, keep, "POST", s.WebhookURL(), webhookBody("x-2", "T"), "Idempotency-Key", "k2")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("create while refusing: %v", err)
	}
	if _, err := net.Dial("tcp", s.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while refusing: %v", err)
	}
	s.ClearFaults()
	createAgain := func(key string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := try(t, client(time.Second), "POST", s.WebhookURL(), webhookBody("x-2", "T"), "Idempotency-Key", key)
			if err == nil && r.status == 201 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the helpdesk did not listen again: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	createAgain("k2")
	// A refusal with For ends by itself.
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Refuse, For: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	createAgain("k3")
	if got := s.Counts(); got.CreateRequests != 3 || got.Creations != 3 {
		t.Fatalf("counts = %+v", got)
	}
}

func TestCloseDuringRefuseAndSlow(t *testing.T) {
	s, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Slow, Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := try(t, client(time.Minute), "POST", s.WebhookURL(), webhookBody("x", "T"))
		done <- err
	}()
	for s.Counts().CreateRequests == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Refuse, For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a slow answer or a refusal")
	}
	if err := <-done; err == nil {
		t.Error("the slow request was answered after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestControlAPI(t *testing.T) {
	s := start(t, helpdesk.Options{})
	c := client(5 * time.Second)
	ctl := s.URL() + helpdesk.ControlPath
	if r := do(t, c, "GET", ctl+"/", ""); r.status != 200 || r.body["webhook_url"] != s.WebhookURL() {
		t.Fatalf("index = %d %s", r.status, r.raw)
	}
	r := do(t, c, "PUT", ctl+"/capabilities", `{"dedup_window":"2h","lookup":true}`)
	if r.status != 200 || r.body["dedup_window"] != "2h0m0s" || r.body["lookup"] != true || r.body["settle_delay"] != "0s" {
		t.Fatalf("put capabilities = %d %s", r.status, r.raw)
	}
	if got := s.Capabilities(); got.DedupWindow != 2*time.Hour || !got.Lookup {
		t.Fatalf("capabilities = %+v", got)
	}
	r = do(t, c, "PUT", ctl+"/capabilities", `{"settle_delay":"5s"}`)
	if r.body["dedup_window"] != "2h0m0s" || r.body["settle_delay"] != "5s" {
		t.Fatalf("partial put = %s", r.raw)
	}
	for _, bad := range []string{`{"dedup_window":"soon"}`, `{"settle_delay":"-1s"}`, `nope`} {
		if r := do(t, c, "PUT", ctl+"/capabilities", bad); r.status != 400 {
			t.Errorf("put %s = %d", bad, r.status)
		}
	}
	if got := do(t, c, "GET", ctl+"/capabilities", ""); got.body["settle_delay"] != "5s" {
		t.Fatalf("get capabilities = %s", got.raw)
	}
	r = do(t, c, "POST", ctl+"/faults", `{"kind":"slow","op":"lookup","count":2,"delay":"3s"}`)
	if faults, _ := r.body["faults"].([]any); r.status != 200 || len(faults) != 1 ||
		faults[0].(map[string]any)["delay"] != "3s" || faults[0].(map[string]any)["count"] != float64(2) {
		t.Fatalf("post fault = %d %s", r.status, r.raw)
	}
	if got := s.Faults(); len(got) != 1 || got[0].Delay != 3*time.Second || got[0].Op != helpdesk.Lookup {
		t.Fatalf("faults = %+v", got)
	}
	for _, bad := range []string{`{"kind":"nope"}`, `{"kind":"slow","delay":"later"}`, `[1]`} {
		if r := do(t, c, "POST", ctl+"/faults", bad); r.status != 400 {
			t.Errorf("post fault %s = %d", bad, r.status)
		}
	}
	if r := do(t, c, "DELETE", ctl+"/faults", ""); r.status != 200 || len(s.Faults()) != 0 {
		t.Fatalf("delete faults = %d, %d left", r.status, len(s.Faults()))
	}
	do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
	r = do(t, c, "GET", ctl+"/tickets", "")
	if list, _ := r.body["tickets"].([]any); len(list) != 1 || list[0].(map[string]any)["idempotency_key"] != "k1" ||
		list[0].(map[string]any)["key_requests"] != float64(1) {
		t.Fatalf("tickets = %s", r.raw)
	}
	if r := do(t, c, "GET", ctl+"/counts", ""); r.body["creations"] != float64(1) || r.body["create_requests"] != float64(1) {
		t.Fatalf("counts = %s", r.raw)
	}
	if r := do(t, c, "GET", ctl+"/keys", ""); r.body["k1"] != float64(1) {
		t.Fatalf("keys = %s", r.raw)
	}
	if r := do(t, c, "POST", ctl+"/reset", ""); r.status != 200 || len(s.Tickets()) != 0 || s.Counts() != (helpdesk.Counts{}) {
		t.Fatalf("reset = %d, %d tickets", r.status, len(s.Tickets()))
	}
	// Ids are never reused after a reset.
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.body["id"] != "2" {
		t.Fatalf("create after reset = %v", r.body)
	}
	if r := do(t, c, "POST", ctl+"/faults", `{"kind":"refuse","for":"100ms"}`); r.status != 200 {
		t.Fatalf("refuse over HTTP = %d", r.status)
	}
	if _, err := net.Dial("tcp", s.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after refuse over HTTP: %v", err)
	}
	if r, err := try(t, c, "GET", s.URL()+"/nothing", ""); err == nil && r.status != 404 {
		t.Fatalf("unknown path = %d", r.status)
	}
}

func TestStartRefusesABadStart(t *testing.T) {
	if _, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: delivery.Capabilities{SettleDelay: -time.Second}}); err == nil {
		t.Error("a negative settle delay was accepted")
	}
	s := start(t, helpdesk.Options{})
	if _, err := helpdesk.Start(s.Addr(), helpdesk.Options{}); err == nil {
		t.Error("a taken address was accepted")
	}
}

// TestControlDuringARefusal: a refuse fault closes the main address, and
// the control API stays reachable on its own address meanwhile: it says
// the helpdesk is refusing, DELETE faults ends the refusal early, and so
// does POST reset, which also drops queued faults and puts the
// capabilities back to those the helpdesk started with.
func TestControlDuringARefusal(t *testing.T) {
	started := delivery.Capabilities{Lookup: true}
	s := start(t, helpdesk.Options{Capabilities: started, ControlAddr: "127.0.0.1:0"})
	c := client(5 * time.Second)
	main, ctl := s.URL()+helpdesk.ControlPath, s.ControlURL()+helpdesk.ControlPath
	if s.ControlURL() == s.URL() {
		t.Fatalf("no control address of its own: %s", s.ControlURL())
	}
	// The control API answers on both addresses; the tickets only on the main one.
	if r := do(t, c, "GET", ctl+"/", ""); r.status != 200 || r.body["control_url"] != s.ControlURL() || r.body["refusing"] != false {
		t.Fatalf("control index = %d %s", r.status, r.raw)
	}
	if r := do(t, c, "POST", s.ControlURL()+helpdesk.WebhookPath, webhookBody("x-1", "T")); r.status != 404 {
		t.Fatalf("a create on the control address = %d", r.status)
	}
	refused := func(what string) {
		t.Helper()
		if _, err := net.Dial("tcp", s.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("%s: dial the main address: %v, want refused", what, err)
		}
	}
	listening := func(what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			r, err := try(t, c, "GET", main+"/counts", "")
			if err == nil && r.status == 200 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the main address does not listen again: %v", what, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Refused as documented, through the main address; ended by DELETE.
	if r := do(t, c, "POST", main+"/faults", `{"kind":"refuse","for":"1m"}`); r.status != 200 {
		t.Fatalf("refuse = %d %s", r.status, r.raw)
	}
	refused("after refuse")
	if r := do(t, c, "GET", ctl+"/", ""); r.status != 200 || r.body["refusing"] != true {
		t.Fatalf("control index while refusing = %d %s", r.status, r.raw)
	}
	if r := do(t, c, "DELETE", ctl+"/faults", ""); r.status != 200 {
		t.Fatalf("delete faults while refusing = %d %s", r.status, r.raw)
	}
	listening("after DELETE faults")

	// Changed capabilities, a ticket, a queued fault and a refusal: reset
	// forgets them all.
	if r := do(t, c, "PUT", main+"/capabilities", `{"dedup_window":"2h","lookup":false,"settle_delay":"5s"}`); r.status != 200 {
		t.Fatalf("put capabilities = %d", r.status)
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 201 {
		t.Fatalf("create = %d", r.status)
	}
	do(t, c, "POST", main+"/faults", `{"kind":"fail_before","count":3}`)
	do(t, c, "POST", main+"/faults", `{"kind":"refuse","for":"1m"}`)
	refused("after the second refuse")
	if r := do(t, c, "POST", ctl+"/reset", ""); r.status != 200 {
		t.Fatalf("reset while refusing = %d %s", r.status, r.raw)
	}
	listening("after reset")
	if got := s.Capabilities(); got != started {
		t.Errorf("capabilities after reset = %+v, want those at start %+v", got, started)
	}
	if len(s.Faults()) != 0 || len(s.Tickets()) != 0 || s.Counts() != (helpdesk.Counts{}) || s.Refusing() {
		t.Errorf("after reset: faults %v, %d tickets, counts %+v, refusing %v", s.Faults(), len(s.Tickets()), s.Counts(), s.Refusing())
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-2", "T"), "Idempotency-Key", "k2"); r.status != 201 {
		t.Errorf("create after reset = %d: a queued fault survived", r.status)
	}
}

// TestReplaysErrorsPerKey: with ReplaysErrors, a key whose create was
// answered with an error (before or after creating) gets that same error
// again for as long as the key is remembered, whatever the helpdesk could
// do now; a 429 is not kept; other keys, and the key once the window has
// passed, are served as usual. Without the capability the error is not
// kept.
func TestReplaysErrorsPerKey(t *testing.T) {
	clk := newClock()
	s := start(t, helpdesk.Options{Capabilities: delivery.Capabilities{DedupWindow: time.Hour, ReplaysErrors: true}, Now: clk.now})
	c := client(5 * time.Second)
	for _, f := range []helpdesk.Fault{{Kind: helpdesk.FailBefore, Status: 503}, {Kind: helpdesk.FailAfter, Status: 500},
		{Kind: helpdesk.RateLimit}} {
		if err := s.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 503 {
		t.Fatalf("first create = %d", r.status)
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-2", "T"), "Idempotency-Key", "k2"); r.status != 500 {
		t.Fatalf("create after creating = %d", r.status)
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-3", "T"), "Idempotency-Key", "k3"); r.status != 429 {
		t.Fatalf("rate limited = %d", r.status)
	}
	for range 2 {
		if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 503 || r.body["error"] != "injected_fault" {
			t.Fatalf("k1 again = %d %v, want its 503 replayed", r.status, r.body)
		}
		if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-2", "T"), "Idempotency-Key", "k2"); r.status != 500 {
			t.Fatalf("k2 again = %d, want its 500 replayed", r.status)
		}
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-3", "T"), "Idempotency-Key", "k3"); r.status != 201 {
		t.Fatalf("k3 after a 429 = %d, want created", r.status)
	}
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1-resend"); r.status != 201 {
		t.Fatalf("a new key = %d, want created", r.status)
	}
	if got := s.Counts(); got.ErrorReplays != 4 || got.Creations != 3 {
		t.Fatalf("counts = %+v, want 4 error replays and 3 tickets (k2's made before its 500)", got)
	}
	clk.advance(time.Hour)
	if r := do(t, c, "POST", s.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 201 {
		t.Fatalf("k1 past the window = %d, want created", r.status)
	}

	plain := start(t, helpdesk.Options{Capabilities: delivery.Capabilities{DedupWindow: time.Hour}})
	if err := plain.Inject(helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 503}); err != nil {
		t.Fatal(err)
	}
	_ = do(t, c, "POST", plain.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1")
	if r := do(t, c, "POST", plain.WebhookURL(), webhookBody("x-1", "T"), "Idempotency-Key", "k1"); r.status != 201 {
		t.Fatalf("without ReplaysErrors, k1 again = %d, want created", r.status)
	}
}

// TestLateCreateIsMadeAfterItsClientGaveUp: a late create is held past
// its client's timeout and then made all the same, as a front that
// forwards what it was sent; one whose helpdesk closes meanwhile is
// dropped.
func TestLateCreateIsMadeAfterItsClientGaveUp(t *testing.T) {
	s := start(t, helpdesk.Options{})
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Late, Delay: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := try(t, client(50*time.Millisecond), http.MethodPost, s.WebhookURL(), webhookBody("late-1", "Late")); err == nil {
		t.Fatal("answered inside the client's timeout")
	}
	if n := len(s.TicketsByExternalID("late-1")); n != 0 {
		t.Fatalf("%d tickets while the create is held, want 0", n)
	}
	for wait := time.Now().Add(5 * time.Second); len(s.TicketsByExternalID("late-1")) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatal("the held create was never made")
		}
	}
	if err := s.Inject(helpdesk.Fault{Kind: helpdesk.Late, Op: helpdesk.Lookup}); err == nil {
		t.Fatal("a late lookup was accepted: late applies to creates only")
	}
}
