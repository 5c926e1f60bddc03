package zendesk

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/httpsend"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Name is the destination kind (DESTINATION=zendesk).
const Name = "zendesk"

// Capabilities declared for Zendesk (FACTS.md, facts 4 to 6).
const (
	// DedupWindow is half the 2 hours Zendesk is reported to remember a
	// key, which its reference does not state: a retry later than this
	// looks the ticket up first.
	DedupWindow = time.Hour
	// SettleDelay is how long a lookup miss is not trusted after an
	// ambiguous create, unless Options say otherwise: the list endpoint's
	// consistency is not documented, and search takes "up to a few
	// minutes".
	SettleDelay = 5 * time.Minute
)

// Paths and markers.
const (
	// TicketsPath is the create and list endpoint.
	TicketsPath = "/api/v2/tickets.json"
	// AgentPath prefixes the page where a person opens a ticket.
	AgentPath = "/agent/tickets/"
	// Tag is added to every ticket oncecall creates.
	Tag = "oncecall"
	// ErrorKeyReused is the error Zendesk answers a known key sent with
	// another payload.
	ErrorKeyReused = "IdempotentRequestError"
	// CodeKeyReused is the Result.Code of that answer.
	CodeKeyReused = "key_reused"
)

// Options configure a Zendesk destination.
type Options struct {
	// Credentials authenticate every request. They may be empty only for
	// a loopback base URL (the local helpdesk).
	Credentials Credentials
	// Timeout bounds each request (DESTINATION_TIMEOUT); zero means
	// httpsend.DefaultTimeout.
	Timeout time.Duration
	// SettleDelay replaces the declared SettleDelay when positive
	// (DESTINATION_SETTLE_DELAY), for an account whose lookups are known
	// to lag more, or less.
	SettleDelay time.Duration
	// RequestHorizon (DESTINATION_REQUEST_HORIZON): how long a create
	// whose client gave up may still reach Zendesk
	// (delivery.Capabilities.RequestHorizon); zero for
	// delivery.DefaultRequestHorizon.
	RequestHorizon time.Duration
	// TenantField and RequesterField, when set, are the ids of custom
	// ticket fields that receive oncecall's tenant id and user id. What
	// has no field is written in a line at the start of the first comment.
	TenantField, RequesterField int64
	// RequesterID, when set, is the Zendesk user made the requester of
	// every ticket; otherwise the API user is.
	RequesterID int64
	// AllowHTTP accepts a plain http base URL to a host that is not
	// loopback (a test double on a private network).
	AllowHTTP bool
}

// Destination delivers tickets to Zendesk. It is safe for concurrent use.
type Destination struct {
	base   string // scheme://host[/prefix], no trailing slash
	auth   string
	opts   Options
	client *httpsend.Client
}

var _ delivery.Destination = (*Destination)(nil)

// MaxSubdomainLength is the longest DNS label a subdomain may be.
const MaxSubdomainLength = 63

// validSubdomain reports whether s is one DNS label of lower-case letters,
// digits and inner hyphens. (A loop, not a regular expression: compiling
// `[a-z0-9-]{0,61}` at package initialization cost every cold start of
// the callback, which links this package, a fifth of a millisecond.)
func validSubdomain(s string) bool {
	if s == "" || len(s) > MaxSubdomainLength || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// BaseURL is the base URL of a Zendesk subdomain (ZENDESK_SUBDOMAIN):
// https://<subdomain>.zendesk.com.
func BaseURL(subdomain string) (string, error) {
	if !validSubdomain(subdomain) {
		return "", errors.New("zendesk: the subdomain must be lower-case letters, digits and hyphens")
	}
	return "https://" + subdomain + ".zendesk.com", nil
}

// New returns a Zendesk destination at baseURL (DESTINATION_URL, such as
// https://example.zendesk.com). Its errors never quote the URL or the
// credentials.
func New(baseURL string, o Options) (*Destination, error) {
	u, err := httpsend.ParseURL(baseURL, o.AllowHTTP)
	if err != nil {
		return nil, errors.New("zendesk: " + err.Error())
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, errors.New("zendesk: the base URL must not have a query")
	}
	auth, err := o.Credentials.header()
	switch {
	case err != nil:
		return nil, err
	case auth == "" && !httpsend.Loopback(u.Hostname()):
		return nil, errors.New("zendesk: credentials are required (only a loopback test helpdesk may go without)")
	case o.Timeout < 0 || o.SettleDelay < 0 || o.RequestHorizon < 0 || o.TenantField < 0 || o.RequesterField < 0 || o.RequesterID < 0:
		return nil, errors.New("zendesk: the timeout, settle delay and ids must not be negative")
	}
	if o.SettleDelay == 0 {
		o.SettleDelay = SettleDelay
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return &Destination{base: u.String(), auth: auth, opts: o, client: httpsend.New(o.Timeout, true)}, nil
}

// Name returns Name.
func (d *Destination) Name() string { return Name }

// Capabilities returns Zendesk's: DedupWindow, lookup, and SettleDelay or
// the one Options gave. ReplaysErrors is false: Zendesk's reference says a
// remembered key returns the ticket its first create made and does not
// say that it keeps errors, so a resend after an operator's not-created
// decision keeps the ticket's key, and a ticket the operator missed is
// found under it rather than made twice.
func (d *Destination) Capabilities() delivery.Capabilities {
	return delivery.Capabilities{DedupWindow: DedupWindow, Lookup: true, SettleDelay: d.opts.SettleDelay, RequestHorizon: d.opts.RequestHorizon}
}

// CloseIdleConnections closes kept-alive connections not in use.
func (d *Destination) CloseIdleConnections() { d.client.CloseIdleConnections() }

// TicketURL is the page where a person opens Zendesk ticket id.
func (d *Destination) TicketURL(id string) string { return d.base + AgentPath + url.PathEscape(id) }

type createBody struct {
	Ticket newTicket `json:"ticket"`
}

type newTicket struct {
	Subject      string        `json:"subject"`
	Comment      comment       `json:"comment"`
	Priority     string        `json:"priority,omitempty"`
	Tags         []string      `json:"tags"`
	ExternalID   string        `json:"external_id"`
	RequesterID  int64         `json:"requester_id,omitempty"`
	CustomFields []customField `json:"custom_fields,omitempty"`
}

type comment struct {
	Body string `json:"body"`
}

type customField struct {
	ID    int64  `json:"id"`
	Value string `json:"value"`
}

// Identity lines: what the first comment starts with for the tenant and
// the user that have no custom field, and the line that ends them.
const (
	TenantLine    = "oncecall tenant: "
	UserLine      = "oncecall user: "
	IdentityEnd   = "--"
	QuotedMarker  = "[quoted] "
	identityToken = "oncecall"
)

// bodyOf is the create body for t. It depends on t and the Options alone,
// so every attempt for one ticket sends the same payload.
//
// The tenant and user come from oncecall's records. Each goes into its
// custom field when one is configured, which the model cannot write;
// otherwise into a block at the very start of the first comment, ended by
// IdentityEnd, before anything the model wrote, and every line of the
// model's text that could pass for one of those lines is marked
// QuotedMarker. The model's tags are namespaced (delivery.ModelTags).
func (d *Destination) bodyOf(t ticket.Ticket) createBody {
	text := t.Description
	if strings.TrimSpace(text) == "" {
		text = t.Title
	}
	var block []string
	var fields []customField
	if d.opts.TenantField != 0 {
		fields = append(fields, customField{ID: d.opts.TenantField, Value: t.Tenant})
	} else {
		block = append(block, TenantLine+t.Tenant)
	}
	if d.opts.RequesterField != 0 {
		fields = append(fields, customField{ID: d.opts.RequesterField, Value: t.UserID})
	} else {
		block = append(block, UserLine+t.UserID)
	}
	if len(block) > 0 {
		text = strings.Join(block, "\n") + "\n" + IdentityEnd + "\n\n" + neutralize(text)
	}
	tags := append(delivery.ModelTags(t.Tags), Tag)
	return createBody{Ticket: newTicket{Subject: t.Title, Comment: comment{Body: text}, Priority: delivery.Priority(t.Priority),
		Tags: tags, ExternalID: t.ID, RequesterID: d.opts.RequesterID, CustomFields: fields}}
}

// neutralize marks with QuotedMarker every line of text that reads as
// starting with "oncecall" (lookalike): a forged identity line, however
// spaced, cased, decorated or spelled with look-alike letters. A line ends
// at any character a reader's screen may break a line at (lineBreak), not
// only at "\n".
func neutralize(text string) string {
	var b strings.Builder
	for text != "" {
		end := strings.IndexFunc(text, lineBreak)
		line, sep := text, ""
		if end >= 0 {
			_, size := utf8.DecodeRuneInString(text[end:])
			line, sep = text[:end], text[end:end+size]
		}
		if lookalike(line) {
			b.WriteString(QuotedMarker)
		}
		b.WriteString(line)
		b.WriteString(sep)
		text = text[len(line)+len(sep):]
	}
	return b.String()
}

// lineBreak reports whether r ends a line somewhere a ticket is shown:
// Unicode's mandatory breaks (LF, VT, FF, CR, NEL, the line and paragraph
// separators).
func lineBreak(r rune) bool {
	switch r {
	case '\n', '\v', '\f', '\r', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// lookalike reports whether the first letters of line, once each is
// reduced to the ASCII letter it looks like (skeleton), spell "oncecall".
func lookalike(line string) bool {
	var b strings.Builder
	for _, r := range norm.NFKD.String(line) {
		if c := skeleton(r); c != 0 {
			b.WriteByte(c)
			if b.Len() == len(identityToken) {
				break
			}
		}
	}
	return b.String() == identityToken
}

// skeleton is the lower-case ASCII letter r looks like, or 0 for a rune
// that is skipped (spaces, punctuation, other digits, the combining marks
// that NFKD splits off accented letters, letters that look like none). Compatibility
// forms (fullwidth, mathematical letters) are folded by NFKD before; the
// look-alikes of the letters of "oncecall" in other scripts, and the
// digits and capitals read as "l" and "o", are mapped here (from Unicode's
// confusables, those of o, n, c, e, a and l).
func skeleton(r rune) byte {
	switch r {
	case 'I', '1', '|', 'ǀ', 'ӏ', 'Ӏ', 'ι', 'Ι', 'ו', 'ا', 'ℓ', 'ł', 'Ł':
		return 'l'
	case '0', 'ο', 'Ο', 'о', 'О', 'օ', 'Օ', 'ⲟ', 'Ⲟ', 'ᴏ', 'σ', '०', '٥', '۵':
		return 'o'
	case 'с', 'С', 'ϲ', 'Ϲ', 'ᴄ', 'ⲥ', 'Ⲥ':
		return 'c'
	case 'е', 'Е', 'ҽ', 'Ҽ', 'ε', 'Ε', 'є', 'Є', 'ꬲ', '℮':
		return 'e'
	case 'а', 'А', 'α', 'Α', 'ɑ', '⍺':
		return 'a'
	case 'ո', 'п', 'П', 'η', 'Ν':
		return 'n'
	}
	if r < utf8.RuneSelf && unicode.IsLetter(r) {
		return byte(unicode.ToLower(r))
	}
	// Any other letter is skipped, as a mark or a space is: a word spelled
	// around it still reads as the word (and a false match only adds the
	// marker).
	return 0
}

// Create creates t with Idempotency-Key key.
func (d *Destination) Create(ctx context.Context, key string, t ticket.Ticket) delivery.Result {
	if r, ok := httpsend.CheckKey(key); !ok {
		return r
	}
	req, err := httpsend.JSONRequest(ctx, http.MethodPost, d.base+TicketsPath, d.bodyOf(t), d.auth)
	if err != nil {
		return delivery.Result{Outcome: delivery.Refused, Code: httpsend.CodeBadRequest}
	}
	req.Header.Set(httpsend.KeyHeader, key)
	a, err := d.client.Send(ctx, req)
	if err != nil {
		return httpsend.FailureResult(err, true)
	}
	if a.Status == http.StatusBadRequest && keyReused(a.Body) {
		// The key reached Zendesk before, with another payload: that
		// request may have made the ticket (FACTS.md, fact 3).
		return delivery.Result{Outcome: delivery.Ambiguous, Status: a.Status, Code: CodeKeyReused}
	}
	r := httpsend.CreateResult(a, true, func(a httpsend.Answer) (delivery.Receipt, bool) {
		var out struct {
			Ticket *ticketRef `json:"ticket"`
		}
		if json.Unmarshal(a.Body, &out) != nil || out.Ticket == nil {
			return delivery.Receipt{}, false
		}
		return d.receipt(*out.Ticket)
	})
	if r.Outcome == delivery.Created && strings.EqualFold(a.Header.Get(httpsend.LookupHeader), "hit") {
		r.Code = httpsend.CodeReplayed
	}
	return r
}

func keyReused(body []byte) bool {
	var e struct {
		Error any `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error == ErrorKeyReused
}

// Lookup lists the tickets whose external_id is externalID. A list with a
// ticket that does not carry externalID is a bad answer.
func (d *Destination) Lookup(ctx context.Context, _, externalID string) delivery.Result {
	target := d.base + TicketsPath + "?" + url.Values{"external_id": {externalID}}.Encode()
	return d.client.Lookup(ctx, target, d.auth, func(a httpsend.Answer) ([]delivery.Receipt, bool) {
		var list struct {
			Tickets *[]ticketRef `json:"tickets"`
		}
		if json.Unmarshal(a.Body, &list) != nil || list.Tickets == nil {
			return nil, false
		}
		out := make([]delivery.Receipt, 0, len(*list.Tickets))
		for _, t := range *list.Tickets {
			if t.ExternalID == nil || *t.ExternalID != externalID {
				// Missing, null or another: not proven to be the ticket
				// asked for (a proxy may have dropped the filter).
				return nil, false
			}
			rc, ok := d.receipt(t)
			if !ok {
				return nil, false
			}
			out = append(out, rc)
		}
		return out, true
	})
}

// ticketRef is the part of Zendesk's ticket object read back.
type ticketRef struct {
	ID         json.Number `json:"id"`
	ExternalID *string     `json:"external_id"`
}

func (d *Destination) receipt(t ticketRef) (delivery.Receipt, bool) {
	id, err := t.ID.Int64()
	if err != nil || id <= 0 {
		return delivery.Receipt{}, false
	}
	s := strconv.FormatInt(id, 10)
	return delivery.Receipt{ID: s, URL: d.TicketURL(s)}, true
}

// Credentials authenticate requests to Zendesk: an API token with the
// e-mail address of its user, or an OAuth access token. They never print.
type Credentials struct {
	Email      string `json:"email"`
	APIToken   string `json:"api_token"`
	OAuthToken string `json:"oauth_token"`
}

// ParseCredentials reads credentials from configuration (DESTINATION_TOKEN
// or the destination secret): "{email}/token:{api_token}", an OAuth access
// token, or a JSON object {"email", "api_token"} or {"oauth_token"}. Its
// errors never quote the value.
func ParseCredentials(v string) (Credentials, error) {
	v = strings.TrimSpace(v)
	var c Credentials
	switch {
	case v == "":
		return c, errors.New("zendesk: the credentials are empty")
	case strings.HasPrefix(v, "{"):
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if dec.Decode(&c) != nil {
			return Credentials{}, errors.New(`zendesk: credentials in JSON must be {"email": …, "api_token": …} or {"oauth_token": …}`)
		}
	default:
		if email, token, ok := strings.Cut(v, "/token:"); ok {
			c.Email, c.APIToken = email, token
		} else {
			c.OAuthToken = v
		}
	}
	if _, err := c.header(); err != nil {
		return Credentials{}, err
	}
	if c == (Credentials{}) {
		return c, errors.New("zendesk: the credentials are empty")
	}
	return c, nil
}

// header is the Authorization header value ("" for no credentials).
func (c Credentials) header() (string, error) {
	apiToken := c.Email != "" || c.APIToken != ""
	switch {
	case apiToken && c.OAuthToken != "":
		return "", errors.New("zendesk: give an API token or an OAuth token, not both")
	case apiToken && (c.Email == "" || c.APIToken == ""):
		return "", errors.New("zendesk: an API token needs the e-mail address of its user")
	case apiToken && (strings.Contains(c.Email, ":") || !httpsend.ValidHeaderValue(c.Email) || !httpsend.ValidHeaderValue(c.APIToken)):
		return "", errors.New("zendesk: the e-mail address or API token has characters that cannot be sent")
	case apiToken:
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.Email+"/token:"+c.APIToken)), nil
	case c.OAuthToken != "" && !httpsend.ValidHeaderValue(c.OAuthToken):
		return "", errors.New("zendesk: the OAuth token has characters that cannot be sent")
	case c.OAuthToken != "":
		return "Bearer " + c.OAuthToken, nil
	}
	return "", nil
}

// String hides the credentials.
func (c Credentials) String() string {
	switch {
	case c.APIToken != "":
		return "zendesk API token (redacted)"
	case c.OAuthToken != "":
		return "zendesk OAuth token (redacted)"
	}
	return "no zendesk credentials"
}

// GoString hides the credentials from %#v.
func (c Credentials) GoString() string { return c.String() }

// MarshalJSON hides the credentials from encoders (and loggers using them).
func (c Credentials) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }
