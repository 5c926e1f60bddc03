package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/httpsend"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Name is the destination kind (DESTINATION=webhook).
const Name = "webhook"

// Options configure a webhook destination.
type Options struct {
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Capabilities are what the destination promises about duplicates
	// (DESTINATION_DEDUP_WINDOW, DESTINATION_LOOKUP,
	// DESTINATION_SETTLE_DELAY). With DedupWindow zero, connections are
	// never reused, so that Go's transport never sends a create twice.
	Capabilities delivery.Capabilities
	// Timeout bounds each request (DESTINATION_TIMEOUT); zero means
	// httpsend.DefaultTimeout.
	Timeout time.Duration
	// AllowHTTP accepts a plain http URL to a host that is not loopback
	// (a private network). The token then travels in clear text.
	AllowHTTP bool
}

// Destination delivers tickets by the webhook contract. It is safe for
// concurrent use.
type Destination struct {
	url    *url.URL
	auth   string
	caps   delivery.Capabilities
	client *httpsend.Client
}

var _ delivery.Destination = (*Destination)(nil)

// New returns a webhook destination posting to rawURL (DESTINATION_URL).
// Its errors never quote the URL or the token.
func New(rawURL string, o Options) (*Destination, error) {
	u, err := httpsend.ParseURL(rawURL, o.AllowHTTP)
	if err != nil {
		return nil, errors.New("webhook: " + err.Error())
	}
	switch {
	case o.Capabilities.DedupWindow < 0 || o.Capabilities.SettleDelay < 0 || o.Capabilities.RequestHorizon < 0:
		return nil, errors.New("webhook: the dedup window and settle delay must not be negative")
	case o.Timeout < 0:
		return nil, errors.New("webhook: the timeout must not be negative")
	case o.Token != "" && !httpsend.ValidHeaderValue(o.Token):
		return nil, errors.New("webhook: the token must be printable ASCII without surrounding spaces")
	}
	d := &Destination{url: u, caps: o.Capabilities,
		client: httpsend.New(o.Timeout, o.Capabilities.DedupWindow > 0)}
	if o.Token != "" {
		d.auth = "Bearer " + o.Token
	}
	return d, nil
}

// Name returns Name.
func (d *Destination) Name() string { return Name }

// Capabilities returns the capabilities New was given.
func (d *Destination) Capabilities() delivery.Capabilities { return d.caps }

// CloseIdleConnections closes kept-alive connections not in use.
func (d *Destination) CloseIdleConnections() { d.client.CloseIdleConnections() }

// body is the contract's create body.
type body struct {
	ExternalID  string   `json:"external_id"`
	TenantID    string   `json:"tenant_id"`
	Requester   string   `json:"requester"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    string   `json:"priority"`
	Tags        []string `json:"tags"`
	CreatedAt   string   `json:"created_at"`
}

// bodyOf is the body Create sends for t. It depends on t alone, so every
// attempt for one ticket sends the same bytes. The tenant and requester
// are members of their own, from oncecall's records; the model's tags are
// namespaced (delivery.ModelTags), its priority one of four
// (delivery.Priority).
func bodyOf(t ticket.Ticket) body {
	return body{ExternalID: t.ID, TenantID: t.Tenant, Requester: t.UserID, Title: t.Title,
		Description: t.Description, Priority: delivery.Priority(t.Priority), Tags: delivery.ModelTags(t.Tags),
		CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339)}
}

// Create posts t with Idempotency-Key key.
func (d *Destination) Create(ctx context.Context, key string, t ticket.Ticket) delivery.Result {
	if r, ok := httpsend.CheckKey(key); !ok {
		return r
	}
	req, err := httpsend.JSONRequest(ctx, http.MethodPost, d.url.String(), bodyOf(t), d.auth)
	if err != nil {
		return delivery.Result{Outcome: delivery.Refused, Code: httpsend.CodeBadRequest}
	}
	req.Header.Set(httpsend.KeyHeader, key)
	a, err := d.client.Send(ctx, req)
	if err != nil {
		return httpsend.FailureResult(err, true)
	}
	r := httpsend.CreateResult(a, d.caps.DedupWindow > 0, func(a httpsend.Answer) (delivery.Receipt, bool) {
		var ref reference
		if json.Unmarshal(a.Body, &ref) != nil {
			return delivery.Receipt{}, false
		}
		return ref.receipt()
	})
	// Not part of the contract, but a destination may say, as Zendesk does,
	// that it recognized the key.
	if r.Outcome == delivery.Created && strings.EqualFold(a.Header.Get(httpsend.LookupHeader), "hit") {
		r.Code = httpsend.CodeReplayed
	}
	return r
}

// Lookup asks for the tickets whose external id is externalID. Every
// ticket listed must carry externalID as its external_id: a list with a
// ticket that does not (a helpdesk or proxy ignoring the filter) is a bad
// answer, so another ticket is never taken for this one.
func (d *Destination) Lookup(ctx context.Context, _, externalID string) delivery.Result {
	if !d.caps.Lookup {
		return delivery.Result{Outcome: delivery.Unavailable, Code: httpsend.CodeLookupUnsupported}
	}
	u := *d.url
	q := u.Query()
	q.Set("external_id", externalID)
	u.RawQuery = q.Encode()
	return d.client.Lookup(ctx, u.String(), d.auth, func(a httpsend.Answer) ([]delivery.Receipt, bool) {
		var list struct {
			Tickets *[]reference `json:"tickets"`
		}
		// "tickets" must be there: a 200 from something that does not
		// implement lookups must not read as "absent", which would let a
		// ticket be sent again.
		if json.Unmarshal(a.Body, &list) != nil || list.Tickets == nil {
			return nil, false
		}
		out := make([]delivery.Receipt, 0, len(*list.Tickets))
		for _, ref := range *list.Tickets {
			if ref.ExternalID == nil || *ref.ExternalID != externalID {
				return nil, false // not proven to be the ticket asked for
			}
			rc, ok := ref.receipt()
			if !ok {
				return nil, false
			}
			out = append(out, rc)
		}
		return out, true
	})
}

// reference is a ticket as the contract's answers name it. The id may be a
// JSON string or number; ExternalID is required in a lookup's list.
type reference struct {
	ID         json.RawMessage `json:"id"`
	URL        string          `json:"url"`
	ExternalID *string         `json:"external_id"`
}

func (r reference) receipt() (delivery.Receipt, bool) {
	id := strings.TrimSpace(string(r.ID))
	if id == "" || id == "null" {
		return delivery.Receipt{}, false
	}
	if id[0] == '"' {
		if json.Unmarshal(r.ID, &id) != nil {
			return delivery.Receipt{}, false
		}
	} else if strings.Trim(id, "0123456789") != "" {
		return delivery.Receipt{}, false // an object, a list, a boolean, a fraction, a sign
	}
	return delivery.Receipt{ID: id, URL: r.URL}, true
}
