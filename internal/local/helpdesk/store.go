package helpdesk

import (
	"net/http"
	"strconv"
	"time"
)

// Fronts a ticket can arrive through.
const (
	ViaWebhook = "webhook"
	ViaZendesk = "zendesk"
)

// Ticket is a ticket the helpdesk holds, as inspection shows it.
type Ticket struct {
	ID int64 `json:"id"`
	// URL is where a person opens it (AgentPath).
	URL string `json:"url"`
	// Via is the front it arrived through: ViaWebhook or ViaZendesk.
	Via        string `json:"via"`
	ExternalID string `json:"external_id"`
	// IdempotencyKey is the key of the create that made it ("" if none).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// KeyRequests is how many create requests carried IdempotencyKey,
	// whatever became of them.
	KeyRequests int      `json:"key_requests"`
	Tenant      string   `json:"tenant_id,omitempty"`
	Requester   string   `json:"requester,omitempty"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Priority    string   `json:"priority,omitempty"`
	Tags        []string `json:"tags"`
	// SentAt is the created_at the sender gave (webhook).
	SentAt string `json:"created_at,omitempty"`
	// ReceivedAt is when the helpdesk created it.
	ReceivedAt time.Time `json:"received_at"`
	// RequesterID and CustomFields are as sent to the Zendesk front.
	RequesterID  int64         `json:"requester_id,omitempty"`
	CustomFields []CustomField `json:"custom_fields,omitempty"`
}

// CustomField is a Zendesk custom field value.
type CustomField struct {
	ID    int64 `json:"id"`
	Value any   `json:"value"`
}

// Counts are the requests the helpdesk received and what it did.
type Counts struct {
	// CreateRequests and LookupRequests count the requests that reached
	// the helpdesk, whatever became of them.
	CreateRequests int `json:"create_requests"`
	LookupRequests int `json:"lookup_requests"`
	// Creations counts tickets made; Replays counts creates answered with
	// an earlier ticket because their key was remembered; ErrorReplays
	// counts creates answered with an earlier error of their key (with
	// Capabilities.ReplaysErrors).
	Creations    int `json:"creations"`
	Replays      int `json:"replays"`
	ErrorReplays int `json:"error_replays"`
	// Faults counts requests a fault was applied to.
	Faults int `json:"faults"`
	// Unauthorized counts requests refused for their credentials.
	Unauthorized int `json:"unauthorized"`
}

// keyRecord is what deduplication remembers of a key: the ticket its
// create made, if any, and, with Capabilities.ReplaysErrors, the error its
// create was answered with (fail), which every later create with the key
// gets again while the key is remembered.
type keyRecord struct {
	ticket      *Ticket
	fingerprint string
	at          time.Time
	fail        *Fault
}

// state is everything Reset forgets. Server.mu guards it.
type state struct {
	tickets     []*Ticket
	byKey       map[string]*keyRecord
	keyRequests map[string]int
	counts      Counts
	lastID      int64
}

func (st *state) reset() {
	st.tickets, st.byKey, st.keyRequests, st.counts = nil, map[string]*keyRecord{}, map[string]int{}, Counts{}
}

// Tickets returns every ticket held, oldest first.
func (s *Server) Tickets() []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Ticket, 0, len(s.st.tickets))
	for _, t := range s.st.tickets {
		out = append(out, s.view(t))
	}
	return out
}

// Ticket returns the ticket with id.
func (s *Server) Ticket(id int64) (Ticket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.st.tickets {
		if t.ID == id {
			return s.view(t), true
		}
	}
	return Ticket{}, false
}

// TicketsByExternalID returns the tickets with external id x, visible to
// lookups or not.
func (s *Server) TicketsByExternalID(x string) []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ticket
	for _, t := range s.st.tickets {
		if t.ExternalID == x {
			out = append(out, s.view(t))
		}
	}
	return out
}

// KeyRequests returns how many create requests carried each idempotency
// key.
func (s *Server) KeyRequests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.st.keyRequests))
	for k, n := range s.st.keyRequests {
		out[k] = n
	}
	return out
}

// Counts returns the request and creation counts.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.counts
}

// Reset forgets every ticket, key and count, drops queued faults, ends a
// refusal under way and puts the capabilities back to those the server
// started with (Options.Capabilities). Ticket ids keep increasing, so an id
// is never reused.
func (s *Server) Reset() {
	s.mu.Lock()
	last := s.st.lastID
	s.st.reset()
	s.st.lastID = last
	s.queue = nil
	s.caps = s.opts.Capabilities
	s.mu.Unlock()
	s.endRefusal()
}

// view copies t for a caller. The caller holds mu.
func (s *Server) view(t *Ticket) Ticket {
	v := *t
	v.Tags = append([]string{}, t.Tags...)
	v.CustomFields = append([]CustomField(nil), t.CustomFields...)
	if t.IdempotencyKey != "" {
		v.KeyRequests = s.st.keyRequests[t.IdempotencyKey]
	}
	return v
}

// create stores t, made by a create carrying key whose payload has
// fingerprint fp, unless the key is remembered: then it returns the
// earlier ticket (replay) or, for another payload, conflict. The caller
// holds mu.
func (s *Server) create(t *Ticket, key, fp string) (made *Ticket, replay, conflict bool) {
	now := s.opts.Now()
	if key != "" && s.caps.DedupWindow > 0 {
		if r, ok := s.st.byKey[key]; ok && r.ticket != nil && now.Sub(r.at) < s.caps.DedupWindow {
			if r.fingerprint != fp {
				return nil, false, true
			}
			s.st.counts.Replays++
			return r.ticket, true, false
		}
	}
	s.st.lastID++
	t.ID, t.IdempotencyKey, t.ReceivedAt = s.st.lastID, key, now
	t.URL = s.URL() + AgentPath + "/" + strconv.FormatInt(t.ID, 10)
	if t.Tags == nil {
		t.Tags = []string{}
	}
	s.st.tickets = append(s.st.tickets, t)
	s.st.counts.Creations++
	if key != "" {
		s.st.byKey[key] = &keyRecord{ticket: t, fingerprint: fp, at: now}
	}
	return t, false, false
}

// keepsErrors reports whether the helpdesk keeps the errors of creates
// carrying key. The caller holds mu.
func (s *Server) keepsErrors(key string) bool {
	return key != "" && s.caps.ReplaysErrors && s.caps.DedupWindow > 0
}

// keptError returns the error remembered for key, to be answered again
// instead of doing anything. The caller holds mu.
func (s *Server) keptError(key string) (Fault, bool) {
	if !s.keepsErrors(key) {
		return Fault{}, false
	}
	r, ok := s.st.byKey[key]
	if !ok || r.fail == nil || s.opts.Now().Sub(r.at) >= s.caps.DedupWindow {
		return Fault{}, false
	}
	s.st.counts.ErrorReplays++
	return *r.fail, true
}

// keepError remembers that the create carrying key was answered with
// fault's error (5xx before or after creating, or any other status
// FailBefore or FailAfter gave; a 429 is not kept, as Stripe keeps no
// answer given before the request ran). The caller holds mu.
func (s *Server) keepError(key string, fault Fault) {
	if !s.keepsErrors(key) || fault.Status == http.StatusTooManyRequests {
		return
	}
	r, ok := s.st.byKey[key]
	if !ok || s.opts.Now().Sub(r.at) >= s.caps.DedupWindow {
		r = &keyRecord{at: s.opts.Now()}
		s.st.byKey[key] = r
	}
	f := fault
	r.fail = &f
}

// visible returns the tickets with external id x ("": any) that lookups
// may see now. The caller holds mu.
func (s *Server) visible(x string) []*Ticket {
	now := s.opts.Now()
	var out []*Ticket
	for _, t := range s.st.tickets {
		if (x == "" || t.ExternalID == x) && now.Sub(t.ReceivedAt) >= s.caps.SettleDelay {
			out = append(out, t)
		}
	}
	return out
}
