package rt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/httpsend"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Name is the destination kind (DESTINATION=rt).
const Name = "rt"

// DefaultQueue is the queue tickets go to unless Options name another
// (RT_QUEUE): RT's own first queue.
const DefaultQueue = "General"

// The ticket custom fields oncecall writes. Each must exist and apply to
// the queue (FreeformSingle, without UniqueValues); the adapter checks
// that they do before it sends anything.
const (
	// KeyField carries the delivery's key: what a lookup searches.
	KeyField = "OncecallKey"
	// TenantField and UserField carry oncecall's tenant and user id, as
	// oncecall authenticated them: the model cannot write them.
	TenantField = "OncecallTenant"
	UserField   = "OncecallUser"
	// TicketField carries oncecall's ticket id.
	TicketField = "OncecallTicket"
)

// Fields lists the custom fields oncecall writes, KeyField first.
func Fields() []string { return []string{KeyField, TenantField, UserField, TicketField} }

// Paths of RT's REST 2.0 API and web interface, after the base URL.
const (
	TicketPath  = "/REST/2.0/ticket"
	TicketsPath = "/REST/2.0/tickets"
	QueuePath   = "/REST/2.0/queue/"
	// DisplayPath is where a person opens ticket N: DisplayPath + "N".
	DisplayPath = "/Ticket/Display.html?id="
)

// Limits and timings of the adapter.
const (
	// ReadyFor is how long a successful check of the queue's fields is
	// trusted before the next request checks again.
	ReadyFor = 10 * time.Minute
	// SearchPage is how many tickets one lookup asks for: more than one
	// carrying the key is already a finding, so a page is enough unless
	// RT matched more (TicketSQL ignores case), which is a finding too.
	SearchPage = 20
)

// Result codes of this adapter, besides httpsend's.
const (
	// CodeFieldsMissing: the queue lacks one of Fields (or is not there):
	// nothing is sent until it has them.
	CodeFieldsMissing = "rt_fields_missing"
	// CodeKeyNotKept: RT made a ticket without the key (the field has
	// UniqueValues and another ticket holds the key, or was removed).
	CodeKeyNotKept = "key_not_kept"
	// CodeFieldsNotKept: RT made the ticket with the key but without
	// oncecall's tenant, user or ticket id in their fields.
	CodeFieldsNotKept = "fields_not_kept"
)

// Priorities map oncecall's four onto RT's default labels (RT's
// %PriorityAsString: Low 0, Medium 50, High 100). RT has no fourth:
// urgent is High.
var Priorities = map[string]string{"low": "Low", "normal": "Medium", "high": "High", "urgent": "High"}

// Options configure an RT destination.
type Options struct {
	// Token is an RT auth token (Authorization: token …), from
	// DESTINATION_TOKEN or the destination secret. It may be empty only
	// for a loopback base URL.
	Token string
	// Queue is the queue's name or id (RT_QUEUE); DefaultQueue when empty.
	Queue string
	// Timeout bounds each request (DESTINATION_TIMEOUT); zero means
	// httpsend.DefaultTimeout.
	Timeout time.Duration
	// SettleDelay (DESTINATION_SETTLE_DELAY) is declared as the
	// destination's: how long after an ambiguous create a lookup's miss is
	// not trusted. RT's search shows a ticket as soon as it is made (read
	// after write, measured), so the default is zero; the worker waits
	// three request timeouts anyway (delivery.ResendTimeouts), for a
	// create still queued at RT's web server. Longer where RT's front can
	// hold requests longer.
	SettleDelay time.Duration
	// RequestHorizon (DESTINATION_REQUEST_HORIZON) is declared as the
	// destination's: how long a create whose client gave up may still
	// reach RT through its front (delivery.Capabilities.RequestHorizon);
	// zero for delivery.DefaultRequestHorizon.
	RequestHorizon time.Duration
	// AllowHTTP accepts a plain http base URL to a host that is not
	// loopback.
	AllowHTTP bool
}

// Destination delivers tickets to Request Tracker. It is safe for
// concurrent use.
type Destination struct {
	base   string // scheme://host[:port][/prefix], no trailing slash
	auth   string
	opts   Options
	client *httpsend.Client
	now    func() time.Time

	mu    sync.Mutex
	ready time.Time // until when the queue's fields are known to be there
}

var _ delivery.Destination = (*Destination)(nil)

// New returns an RT destination at baseURL (DESTINATION_URL: RT's web
// address, such as https://rt.example.com or https://example.com/rt). Its
// errors never quote the URL or the token.
func New(baseURL string, o Options) (*Destination, error) {
	u, err := httpsend.ParseURL(baseURL, o.AllowHTTP)
	if err != nil {
		return nil, errors.New("rt: " + err.Error())
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, errors.New("rt: the base URL must not have a query")
	}
	switch {
	case o.Token == "" && !httpsend.Loopback(u.Hostname()):
		return nil, errors.New("rt: a token is required (only a loopback RT may go without)")
	case o.Token != "" && !httpsend.ValidHeaderValue(o.Token):
		return nil, errors.New("rt: the token has characters that cannot be sent")
	case o.Timeout < 0 || o.SettleDelay < 0 || o.RequestHorizon < 0:
		return nil, errors.New("rt: the timeout and settle delay must not be negative")
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if strings.TrimSpace(o.Queue) != o.Queue || strings.ContainsAny(o.Queue, "\r\n\x00") {
		return nil, errors.New("rt: the queue name has leading or trailing space or control characters")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	d := &Destination{base: u.String(), opts: o, client: httpsend.New(o.Timeout, true), now: time.Now}
	if o.Token != "" {
		d.auth = "token " + o.Token
	}
	return d, nil
}

// Name returns Name.
func (d *Destination) Name() string { return Name }

// Capabilities returns RT's: no deduplication, lookup by the key's field,
// SettleDelay as Options gave it. ReplaysErrors is false: RT keeps no
// answers.
func (d *Destination) Capabilities() delivery.Capabilities {
	return delivery.Capabilities{Lookup: true, SettleDelay: d.opts.SettleDelay, RequestHorizon: d.opts.RequestHorizon}
}

// CloseIdleConnections closes kept-alive connections not in use.
func (d *Destination) CloseIdleConnections() { d.client.CloseIdleConnections() }

// TicketURL is the page where a person opens RT ticket id.
func (d *Destination) TicketURL(id string) string { return d.base + DisplayPath + url.QueryEscape(id) }

// SubjectBytes is how much of a subject RT keeps: its Tickets.Subject
// column holds 200 bytes, and RT cuts a longer subject (at a character)
// without a word. A title longer than that also opens the ticket's text.
const SubjectBytes = 200

// createBody is the create request: RT's ticket fields, as REST 2.0 names
// them.
type createBody struct {
	Queue        string            `json:"Queue"`
	Subject      string            `json:"Subject"`
	Content      string            `json:"Content"`
	ContentType  string            `json:"ContentType"`
	Priority     string            `json:"Priority"`
	CustomFields map[string]string `json:"CustomFields"`
}

// fieldsOf are the custom field values the ticket t is created with under
// key: what the created ticket must carry.
func fieldsOf(key string, t ticket.Ticket) map[string]string {
	return map[string]string{KeyField: key, TenantField: t.Tenant, UserField: t.UserID, TicketField: t.ID}
}

// bodyOf is the create body of t under key. It depends on them and the
// Options alone, so every attempt for one ticket sends the same payload.
// The text is the model's description (its title when it wrote none),
// as text/plain: RT shows it escaped, never as markup. The model's tags
// have no place in RT, which has none.
func (d *Destination) bodyOf(key string, t ticket.Ticket) createBody {
	text := t.Description
	switch {
	case strings.TrimSpace(text) == "":
		text = t.Title
	case len(t.Title) > SubjectBytes:
		// RT would cut the subject without a word: the text starts with
		// the whole title, so that what RT shows is what the model wrote.
		text = t.Title + "\n\n" + text
	}
	return createBody{Queue: d.opts.Queue, Subject: t.Title, Content: text, ContentType: "text/plain",
		Priority: Priorities[delivery.Priority(t.Priority)], CustomFields: fieldsOf(key, t)}
}

// Create creates t with key in KeyField, then proves that the ticket RT
// made carries it, alone.
func (d *Destination) Create(ctx context.Context, key string, t ticket.Ticket) delivery.Result {
	if r, ok := httpsend.CheckKey(key); !ok {
		return r
	}
	if r, ok := d.checkReady(ctx); !ok {
		return r
	}
	req, err := httpsend.JSONRequest(ctx, http.MethodPost, d.base+TicketPath, d.bodyOf(key, t), d.auth)
	if err != nil {
		return delivery.Result{Outcome: delivery.Refused, Code: httpsend.CodeBadRequest}
	}
	a, err := d.client.Send(ctx, req)
	if err != nil {
		return httpsend.FailureResult(err, true)
	}
	r := httpsend.CreateResult(a, false, func(a httpsend.Answer) (delivery.Receipt, bool) {
		var out struct {
			ID   json.Number `json:"id"`
			Type string      `json:"type"`
		}
		if json.Unmarshal(a.Body, &out) != nil || out.Type != "ticket" {
			return delivery.Receipt{}, false
		}
		return d.receipt(string(out.ID))
	})
	if r.Outcome != delivery.Created {
		return r
	}
	return d.verify(ctx, key, t, r)
}

// verify proves the ticket created (r) carries key, alone, and oncecall's
// fields: RT drops a field it does not know, and with UniqueValues makes a
// duplicate without the key, answering 201 all the same. When the search
// cannot be made, the create's own answer stands: RT made that ticket for
// this request, and the queue's fields were checked before it.
func (d *Destination) verify(ctx context.Context, key string, t ticket.Ticket, r delivery.Result) delivery.Result {
	found, bad := d.search(ctx, key)
	if bad.Outcome != 0 {
		return r
	}
	var ids []string
	mine := false
	for _, f := range found {
		ids = append(ids, f.id)
		mine = mine || f.id == r.Receipt.ID
	}
	switch {
	case len(found) == 1 && mine:
		if want := fieldsOf(key, t); !carries(found[0].fields, want) {
			d.unready()
			return delivery.Result{Outcome: delivery.Inconsistent, Status: r.Status, Code: CodeFieldsNotKept,
				Reason: fmt.Sprintf("RT ticket %s carries this delivery's key but not oncecall's tenant, user and ticket id in %s, %s and %s: check those fields on the queue", r.Receipt.ID, TenantField, UserField, TicketField)}
		}
		return r
	case mine:
		return delivery.Result{Outcome: delivery.Inconsistent, Status: r.Status, Code: httpsend.CodeFoundSeveral,
			Reason: fmt.Sprintf("RT tickets %s carry this delivery's key (%s was just created): one is the ticket, the others duplicates", strings.Join(ids, ", "), r.Receipt.ID)}
	default:
		d.unready()
		reason := fmt.Sprintf("RT made ticket %s without this delivery's key in %s", r.Receipt.ID, KeyField)
		if len(ids) > 0 {
			reason += fmt.Sprintf("; ticket(s) %s carry it (UniqueValues on the field?): %s is a duplicate", strings.Join(ids, ", "), r.Receipt.ID)
		}
		return delivery.Result{Outcome: delivery.Inconsistent, Status: r.Status, Code: CodeKeyNotKept, Reason: reason}
	}
}

// carries reports whether got holds every value of want.
func carries(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// Lookup searches the tickets whose KeyField is key: one is Found, none
// Absent, more than one Inconsistent. Only tickets whose field carries the
// key exactly count (TicketSQL's = ignores ASCII case); an answer listing
// a ticket whose field is not even the key in another case is a bad answer
// (a proxy that dropped the query).
func (d *Destination) Lookup(ctx context.Context, key, _ string) delivery.Result {
	if r, ok := httpsend.CheckKey(key); !ok {
		return delivery.Result{Outcome: delivery.Unavailable, Code: r.Code}
	}
	if r, ok := d.checkReady(ctx); !ok {
		return r
	}
	found, bad := d.search(ctx, key)
	switch {
	case bad.Outcome != 0:
		return bad
	case len(found) == 0:
		return delivery.Result{Outcome: delivery.Absent, Status: http.StatusOK, Code: httpsend.CodeAbsent}
	case len(found) == 1:
		return delivery.Result{Outcome: delivery.Found, Status: http.StatusOK, Code: httpsend.CodeFound, Receipt: found[0].receipt}
	}
	ids := make([]string, len(found))
	for i, f := range found {
		ids[i] = f.id
	}
	return delivery.Result{Outcome: delivery.Inconsistent, Status: http.StatusOK, Code: httpsend.CodeFoundSeveral,
		Reason: fmt.Sprintf("RT tickets %s carry this delivery's key: one is the ticket, the others duplicates", strings.Join(ids, ", "))}
}

// match is a ticket whose KeyField carries the key exactly.
type match struct {
	id      string
	receipt delivery.Receipt
	fields  map[string]string
}

// Query is the TicketSQL that finds the tickets whose KeyField is key.
func Query(key string) string {
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(key)
	return "CF.{" + KeyField + "} = '" + quoted + "'"
}

// search lists the tickets whose KeyField carries key exactly, in RT's
// order. bad has an Outcome when the search did not answer usably.
func (d *Destination) search(ctx context.Context, key string) (found []match, bad delivery.Result) {
	q := url.Values{"query": {Query(key)}, "fields": {"CustomFields"}, "per_page": {strconv.Itoa(SearchPage)}, "orderby": {"id"}}
	req, err := httpsend.JSONRequest(ctx, http.MethodGet, d.base+TicketsPath+"?"+q.Encode(), nil, d.auth)
	if err != nil {
		return nil, delivery.Result{Outcome: delivery.Unavailable, Code: httpsend.CodeBadRequest}
	}
	a, err := d.client.Send(ctx, req)
	if err != nil {
		return nil, httpsend.FailureResult(err, false)
	}
	// LookupResult classifies the answer; the list it is given is one
	// receipt per exact match.
	r := httpsend.LookupResult(a, func(a httpsend.Answer) ([]delivery.Receipt, bool) {
		var ok bool
		found, ok = d.matches(a.Body, key)
		rcs := make([]delivery.Receipt, len(found))
		for i, f := range found {
			rcs[i] = f.receipt
		}
		return rcs, ok
	})
	switch r.Outcome {
	case delivery.Found, delivery.Absent, delivery.Inconsistent:
		return found, delivery.Result{}
	}
	return nil, r
}

// searchAnswer is the part of RT's search answer read.
type searchAnswer struct {
	Total *int `json:"total"`
	Count *int `json:"count"`
	Items *[]struct {
		ID           json.Number `json:"id"`
		Type         string      `json:"type"`
		CustomFields []struct {
			Name   string   `json:"name"`
			Values []string `json:"values"`
		} `json:"CustomFields"`
	} `json:"items"`
}

// matches reads a search answer: the tickets whose KeyField is key
// exactly. false for an answer of another shape, a ticket whose field is
// not key in any case (the query was not applied), or more tickets than
// one page lists (a finding, as several are).
func (d *Destination) matches(body []byte, key string) ([]match, bool) {
	var s searchAnswer
	if json.Unmarshal(body, &s) != nil || s.Items == nil || s.Total == nil {
		return nil, false
	}
	if *s.Total > len(*s.Items) {
		// More than a page matched the key in some case: report them as
		// several, never a guess.
		out := make([]match, 0, len(*s.Items))
		for _, it := range *s.Items {
			out = append(out, match{id: string(it.ID)})
		}
		if len(out) < 2 {
			return nil, false
		}
		return out, true
	}
	var out []match
	for _, it := range *s.Items {
		fields := map[string]string{}
		for _, cf := range it.CustomFields {
			if slices.Contains(Fields(), cf.Name) && len(cf.Values) == 1 {
				fields[cf.Name] = cf.Values[0]
			}
		}
		v, ok := fields[KeyField]
		switch {
		case it.Type != "ticket" || !ok || !strings.EqualFold(v, key):
			return nil, false
		case v != key:
			continue // RT's = ignores case; this one is another key
		}
		rc, ok := d.receipt(string(it.ID))
		if !ok {
			return nil, false
		}
		out = append(out, match{id: rc.ID, receipt: rc, fields: fields})
	}
	return out, true
}

func (d *Destination) receipt(id string) (delivery.Receipt, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return delivery.Receipt{}, false
	}
	s := strconv.FormatInt(n, 10)
	return delivery.Receipt{ID: s, URL: d.TicketURL(s)}, true
}

// checkReady makes sure the queue has oncecall's fields before anything
// relies on them: without KeyField, RT drops the key from every create
// and a lookup finds nothing, which would read as "not created". It reads
// the queue at most once every ReadyFor while the answer is good.
func (d *Destination) checkReady(ctx context.Context) (delivery.Result, bool) {
	d.mu.Lock()
	ready := d.now().Before(d.ready)
	d.mu.Unlock()
	if ready {
		return delivery.Result{}, true
	}
	req, err := httpsend.JSONRequest(ctx, http.MethodGet, d.base+QueuePath+url.PathEscape(d.opts.Queue), nil, d.auth)
	if err != nil {
		return delivery.Result{Outcome: delivery.Unavailable, Code: httpsend.CodeBadRequest}, false
	}
	a, err := d.client.Send(ctx, req)
	if err != nil {
		return httpsend.FailureResult(err, false), false
	}
	r := delivery.Result{Outcome: delivery.Unavailable, Status: a.Status, Code: httpsend.StatusCode(a.Status),
		RetryAfter: httpsend.RetryAfter(a.Header.Get("Retry-After"), time.Now())}
	switch {
	case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
		r.Auth = true
		return r, false
	case a.Status == http.StatusNotFound:
		r.Code = CodeFieldsMissing // no such queue
		return r, false
	case a.Status != http.StatusOK || a.BodyCode != "":
		return r, false
	}
	var q struct {
		Fields *[]struct {
			Name string `json:"name"`
		} `json:"TicketCustomFields"`
	}
	if json.Unmarshal(a.Body, &q) != nil || q.Fields == nil {
		r.Code = httpsend.CodeBadAnswer
		return r, false
	}
	var names []string
	for _, f := range *q.Fields {
		names = append(names, f.Name)
	}
	for _, want := range Fields() {
		if !slices.Contains(names, want) {
			r.Code = CodeFieldsMissing
			return r, false
		}
	}
	d.mu.Lock()
	d.ready = d.now().Add(ReadyFor)
	d.mu.Unlock()
	return delivery.Result{}, true
}

// unready makes the next request check the queue's fields again.
func (d *Destination) unready() {
	d.mu.Lock()
	d.ready = time.Time{}
	d.mu.Unlock()
}
