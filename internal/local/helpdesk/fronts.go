package helpdesk

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// priorities are the values both fronts accept, as Zendesk's.
var priorities = []string{"low", "normal", "high", "urgent"}

// webhookTicket is the webhook contract's create body.
type webhookTicket struct {
	ExternalID  string   `json:"external_id"`
	TenantID    string   `json:"tenant_id"`
	Requester   string   `json:"requester"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    string   `json:"priority"`
	Tags        []string `json:"tags"`
	CreatedAt   string   `json:"created_at"`
}

// webhookFront speaks the webhook contract. It refuses members the
// contract does not define, so that tests catch an adapter sending more.
func (s *Server) webhookFront() *front {
	fail := func(w http.ResponseWriter, status int, code, msg string) {
		writeJSON(w, status, map[string]string{"error": code, "message": msg})
	}
	ref := func(t Ticket) map[string]string {
		return map[string]string{"id": strconv.FormatInt(t.ID, 10), "url": t.URL, "external_id": t.ExternalID}
	}
	return &front{
		via: ViaWebhook,
		auth: func(r *http.Request) bool {
			return s.opts.Token == "" || equal(r.Header.Get("Authorization"), "Bearer "+s.opts.Token)
		},
		decode: func(body []byte) (*Ticket, string, int, string) {
			var in webhookTicket
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil || dec.More() {
				return nil, "", http.StatusBadRequest, "the body is not the webhook contract's JSON object"
			}
			switch {
			case in.ExternalID == "":
				return nil, "", http.StatusUnprocessableEntity, "external_id is required"
			case strings.TrimSpace(in.Title) == "":
				return nil, "", http.StatusUnprocessableEntity, "title is required"
			case in.Priority != "" && !slices.Contains(priorities, in.Priority):
				return nil, "", http.StatusUnprocessableEntity, "priority must be low, normal, high or urgent"
			}
			t := &Ticket{ExternalID: in.ExternalID, Tenant: in.TenantID, Requester: in.Requester, Title: in.Title,
				Description: in.Description, Priority: in.Priority, Tags: in.Tags, SentAt: in.CreatedAt}
			return t, fingerprint(in), 0, ""
		},
		created: func(w http.ResponseWriter, _ string, t Ticket) {
			writeJSON(w, http.StatusCreated, ref(t))
		},
		conflict: func(w http.ResponseWriter) {
			fail(w, http.StatusUnprocessableEntity, "idempotency_key_reused", "the Idempotency-Key was used before with another payload")
		},
		list: func(w http.ResponseWriter, _ string, ts []Ticket) {
			out := make([]map[string]string, 0, len(ts))
			for _, t := range ts {
				out = append(out, ref(t))
			}
			writeJSON(w, http.StatusOK, map[string]any{"tickets": out})
		},
		show: func(w http.ResponseWriter, _ string, t Ticket) { writeJSON(w, http.StatusOK, t) },
		fail: fail,
	}
}

// zendeskTicket is the part of Zendesk's ticket object the helpdesk reads
// from a create. Other members are ignored, as Zendesk ignores what it does
// not know.
type zendeskTicket struct {
	Subject string `json:"subject"`
	Comment *struct {
		Body   string `json:"body"`
		Public *bool  `json:"public,omitempty"`
	} `json:"comment"`
	Priority     string        `json:"priority"`
	Tags         []string      `json:"tags"`
	ExternalID   string        `json:"external_id"`
	RequesterID  int64         `json:"requester_id"`
	CustomFields []CustomField `json:"custom_fields"`
}

// zendeskFront speaks the shape of Zendesk's ticket API: the ticket wrapped
// in {"ticket": …}, numeric ids, errors as {"error", "description"}, and a
// remembered key sent with another payload refused with 400
// IdempotentRequestError (internal/delivery/zendesk/FACTS.md).
func (s *Server) zendeskFront() *front {
	fail := func(w http.ResponseWriter, status int, code, msg string) {
		writeJSON(w, status, map[string]string{"error": code, "description": msg})
	}
	return &front{
		via:  ViaZendesk,
		auth: s.zendeskAuth,
		decode: func(body []byte) (*Ticket, string, int, string) {
			var doc any
			var in struct {
				Ticket *zendeskTicket `json:"ticket"`
			}
			if json.Unmarshal(body, &doc) != nil || json.Unmarshal(body, &in) != nil || in.Ticket == nil {
				return nil, "", http.StatusBadRequest, "the body is not a JSON object with a ticket"
			}
			z := in.Ticket
			switch {
			case z.Comment == nil || strings.TrimSpace(z.Comment.Body) == "":
				return nil, "", http.StatusUnprocessableEntity, "RecordInvalid: a ticket needs a comment with a body"
			case z.Priority != "" && !slices.Contains(priorities, z.Priority):
				return nil, "", http.StatusUnprocessableEntity, "RecordInvalid: priority is not one of low, normal, high, urgent"
			}
			title := z.Subject
			if title == "" {
				title, _, _ = strings.Cut(z.Comment.Body, "\n")
			}
			t := &Ticket{ExternalID: z.ExternalID, Title: title, Description: z.Comment.Body, Priority: z.Priority,
				Tags: z.Tags, RequesterID: z.RequesterID, CustomFields: z.CustomFields}
			return t, fingerprint(doc), 0, ""
		},
		created: func(w http.ResponseWriter, base string, t Ticket) {
			w.Header().Set("Location", zendeskAPIURL(base, t.ID))
			writeJSON(w, http.StatusCreated, map[string]any{"ticket": zendeskView(base, t)})
		},
		conflict: func(w http.ResponseWriter) {
			fail(w, http.StatusBadRequest, "IdempotentRequestError", "the Idempotency-Key was used before with other request parameters")
		},
		list: func(w http.ResponseWriter, base string, ts []Ticket) {
			out := make([]map[string]any, 0, len(ts))
			for _, t := range ts {
				out = append(out, zendeskView(base, t))
			}
			writeJSON(w, http.StatusOK, map[string]any{"tickets": out, "count": len(out), "next_page": nil, "previous_page": nil})
		},
		show: func(w http.ResponseWriter, base string, t Ticket) {
			writeJSON(w, http.StatusOK, map[string]any{"ticket": zendeskView(base, t)})
		},
		fail: fail,
	}
}

// zendeskAuth accepts API-token credentials ("{email}/token:{token}" in
// Basic auth) or the OAuth bearer token, whichever are configured; any
// request when none are.
func (s *Server) zendeskAuth(r *http.Request) bool {
	o := s.opts
	apiToken := o.ZendeskEmail != "" && o.ZendeskAPIToken != ""
	if !apiToken && o.ZendeskOAuthToken == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	if apiToken {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(o.ZendeskEmail+"/token:"+o.ZendeskAPIToken))
		if equal(h, want) {
			return true
		}
	}
	return o.ZendeskOAuthToken != "" && equal(h, "Bearer "+o.ZendeskOAuthToken)
}

func zendeskAPIURL(base string, id int64) string {
	return base + ZendeskPath + "/" + strconv.FormatInt(id, 10) + ".json"
}

// zendeskView is t as Zendesk's ticket object.
func zendeskView(base string, t Ticket) map[string]any {
	var priority any
	if t.Priority != "" {
		priority = t.Priority
	}
	at := t.ReceivedAt.UTC().Format(time.RFC3339)
	return map[string]any{
		"id": t.ID, "url": zendeskAPIURL(base, t.ID), "external_id": t.ExternalID,
		"subject": t.Title, "raw_subject": t.Title, "description": t.Description,
		"priority": priority, "status": "new", "tags": t.Tags, "requester_id": t.RequesterID,
		"custom_fields": append([]CustomField{}, t.CustomFields...), "created_at": at, "updated_at": at,
	}
}

func equal(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
