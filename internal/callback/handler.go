package callback

import (
	"context"
	"log/slog"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Store is what the Handler needs from storage. The dynamo package
// implements it.
type Store interface {
	// LoadUser reads the record of externalID with a strongly consistent
	// read, or returns identity.ErrUnknown. Every call reads its user so,
	// once, while its nonce is verified.
	LoadUser(ctx context.Context, externalID string) (identity.User, error)
	// Create claims rec and writes t atomically. taken is false when it
	// wrote both; true when the key is taken, holder being the live
	// record that holds it, and nothing was written. An error
	// (idempotency.ErrBusy or another) means it wrote nothing. The user's
	// right to the call is the Handler's to check, from the record
	// LoadUser read, before it calls Create.
	//
	// out, when not nil, is the ticket's delivery (the outbox record),
	// written on the ticket item itself.
	Create(ctx context.Context, rec idempotency.Record, t ticket.Ticket, out *delivery.Record) (holder idempotency.Record, taken bool, err error)
	// ReadTicket reads a ticket with a strongly consistent read. The
	// ticket is nil when absent, its delivery nil when it has none.
	ReadTicket(ctx context.Context, ticketID string) (*ticket.Ticket, *delivery.Record, error)
	// Delivery reads the delivery of a ticket, nil when it has none.
	Delivery(ctx context.Context, ticketID string) (*delivery.Record, error)
	// FirstTicketID is the id of the first ticket userID's requestID
	// creates, the one the application's outcome read finds
	// (ticket.IDFor under the deployment's id key).
	FirstTicketID(ctx context.Context, userID, requestID string) (string, error)
}

// Authenticator checks the X-Request-Nonce header of a call. *nonce.Verifier
// implements it; Verify returns nil or one of the nonce package's errors.
type Authenticator interface {
	Verify(header string) error
	// MaxCost is the highest BCrypt cost accepted, named in refusals; the
	// Handler refuses a nonce above it (nonce.Precheck) before Verify.
	MaxCost() int
}

// Recorder receives one observation per call, for metrics.
type Recorder interface {
	Observe(function, outcome string, status int, d time.Duration)
}

// Outcomes of a call, as logged and counted; the metrics, and the
// template's dashboard and alarms, use these names. An outcome that is the
// answer's status is that protocol.Status* value (created, rejected,
// in_progress, busy, error, found, not_found); these are the others.
const (
	// OutcomeDeduplicated is a replay of a completed operation's result.
	OutcomeDeduplicated = "deduplicated"
	// OutcomeUnauthorized is a refused nonce, user or function: the 401 and
	// 403 answers alike.
	OutcomeUnauthorized = "unauthorized"
	// OutcomeListed is an answered GET /functions or MCP tools/list.
	OutcomeListed = "listed"
	// OutcomeHandshake is an MCP request that calls no function and lists
	// nothing: initialize, ping, server/discover, a notification.
	OutcomeHandshake = "handshake"
)

// Outcomes lists every outcome, for metrics set-up.
var Outcomes = []string{protocol.StatusCreated, OutcomeDeduplicated, protocol.StatusRejected, protocol.StatusInProgress,
	protocol.StatusBusy, OutcomeUnauthorized, protocol.StatusError, protocol.StatusFound, protocol.StatusNotFound, OutcomeListed,
	OutcomeHandshake}

// ResponseReserve is kept back from the caller's deadline so that a slow
// store still leaves time to answer busy instead of being cut off.
const ResponseReserve = 250 * time.Millisecond

// Deadline bounds one call, from the moment a door hands it to the Handler
// to its answer: every store request of the call is sent before it, and a
// stored result or a ticket is shown only before it (a call past it is
// answered busy). On Lambda the callback function's Timeout in
// template.yaml, the same 10 s, ends the invocation by then too; the local
// server (cmd/oncecall) has it from the Handler alone. A template test
// holds the two equal.
const Deadline = 10 * time.Second

// Handler serves callbacks. Its fields are set once at start-up; it is safe
// for concurrent use.
type Handler struct {
	Verifier Authenticator
	Store    Store
	// Tools are the tools served, in the order they are listed.
	Tools     []*Tool
	Policies  idempotency.Policies
	Retention time.Duration
	Logger    *slog.Logger
	Metrics   Recorder
	// Outbox, when set, queues every new ticket for delivery to a
	// destination and reports its delivery in answers.
	Outbox Outbox
	Now    func() time.Time
	NewID  func() string
}

// NewHandler returns a Handler for oncecall's ticket functions over store
// with the defaults filled in.
func NewHandler(v Authenticator, store Store, logger *slog.Logger) *Handler {
	return &Handler{
		Verifier:  v,
		Store:     store,
		Tools:     Tools,
		Policies:  idempotency.Policies{},
		Retention: idempotency.DefaultRetention,
		Logger:    logger,
		Now:       time.Now,
		NewID:     ticket.NewID,
	}
}

// Request is one callback as the transport received it.
type Request struct {
	// Nonce is the X-Request-Nonce header ("" when absent).
	Nonce string
	// Body is the raw request body.
	Body []byte
}

// Call is one function call as a door decoded it: the single entry of the
// pipeline (limits, nonce and the user's record read together, identity,
// authorization, normalization, key derivation, transaction). The callback body and an MCP tools/call both
// become a Call, so the same call gives the same answer through either.
type Call struct {
	// Door names where the fields came from, for refusals and the log.
	Door Door
	// Nonce is the BCrypt hash of the hook key ("" when absent).
	Nonce string
	// Function is the function's name.
	Function string
	// Arguments are the model-generated arguments, not yet validated.
	Arguments map[string]any
	// ExternalUserID is the end user's id; "" when absent.
	ExternalUserID string
	// RequestID is the application's operation id; "" when absent.
	RequestID string
	// Metadata is the application's metadata as sent; never part of a key.
	Metadata map[string]string
	// CallSource and ConversationToken are kept as sent; never part of a key.
	CallSource, ConversationToken string
	// Moment is when the caller prepared the call, UTC; zero when absent.
	Moment time.Time
}

// Door is a door: a way AIVAX reaches oncecall (the Protocol Function
// callback, the MCP server). It says where the door carries each field of
// a Call, so that a refusal names the field as that caller sent it.
type Door struct {
	// Name is the message of the call's log line: "callback", "mcp".
	Name string
	// Nonce, User and RequestID say where the nonce, the external user id
	// and the request id travel.
	Nonce, User, RequestID string
}

// CallbackDoor is the AIVAX Protocol Function callback.
var CallbackDoor = Door{
	Name:      "callback",
	Nonce:     "The " + protocol.NonceHeader + " header",
	User:      "context.externalUserId",
	RequestID: protocol.RequestIDField,
}

// CallFromRequest is the Call of a decoded callback body.
func CallFromRequest(nonce string, req *protocol.Request) Call {
	return Call{
		Door:              CallbackDoor,
		Nonce:             nonce,
		Function:          req.Function,
		Arguments:         req.Arguments,
		ExternalUserID:    req.ExternalUserID,
		RequestID:         req.Metadata[protocol.RequestIDKey],
		Metadata:          req.Metadata,
		CallSource:        req.CallSource,
		ConversationToken: req.ConversationToken,
		Moment:            req.Moment,
	}
}

// UnknownFunction is logged, and counted, in place of a function name
// that is not in the catalogue.
const UnknownFunction = "(unknown)"

// Call serves one callback: the decoded body is served as Serve serves any
// Call. The body is decoded after the nonce's checks that take no BCrypt
// work and before its verification, only to know whose record to read
// meanwhile: a request whose nonce fails is answered as if its body had
// never been read, whatever the body.
func (h *Handler) Call(ctx context.Context, r Request) protocol.Answer {
	c := h.begin(CallbackDoor)
	ctx, cancel := context.WithTimeout(ctx, Deadline)
	defer cancel()
	ans := c.callback(ctx, r)
	c.finish(ctx, ans)
	return ans
}

// Serve serves a call that a door other than the callback decoded: the
// same pipeline, the same answer.
func (h *Handler) Serve(ctx context.Context, in Call) protocol.Answer {
	c := h.begin(in.Door)
	c.in = in
	ctx, cancel := context.WithTimeout(ctx, Deadline)
	defer cancel()
	ans := c.serve(ctx)
	c.finish(ctx, ans)
	return ans
}

// Note is a request a door answered without running a call (an MCP
// handshake, listing or refused envelope), as Handler.Note records it.
type Note struct {
	// Door is the door that answered it.
	Door Door
	// Start is when the door received it, by the Handler's Now.
	Start time.Time
	// Method is the JSON-RPC method, "" when there is none to name.
	Method string
	// Outcome is one of Outcomes.
	Outcome string
	// Code is the refusal's code, "" when it was not refused.
	Code string
	// Status is the HTTP status the door answered.
	Status int
}

// Note records a request a door answered without running a call: the same
// log line and metric as a call's.
func (h *Handler) Note(ctx context.Context, n Note) {
	c := &call{
		h:     h,
		door:  n.Door,
		msg:   n.Door.Name,
		start: n.Start,
		log:   entry{method: n.Method, outcome: n.Outcome, code: n.Code},
	}
	c.finish(ctx, protocol.Answer{Status: n.Status})
}
