package callback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/schema"
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

// LateWriteMargin is how long after a call's Deadline the store may still
// apply a write the call sent before it: a request DynamoDB received, or
// was still receiving, when the call gave up on it. SECURITY.md says why
// this long, and what it does not cover.
const LateWriteMargin = 10 * time.Second

// RevocationWait is how long after a change that takes access away (a user
// disabled, a function revoked, a user deleted) a call that read the
// record as it was before may still commit a ticket or answer a stored
// result: such a call started before the change, so it ends within
// Deadline of it, and what it wrote lands within LateWriteMargin after
// that. oncecall-admin waits this long before such a change returns; from
// then on, every call of the user is answered from the record as changed.
const RevocationWait = Deadline + LateWriteMargin

// Handler serves callbacks. Its fields are set once at start-up; it is safe
// for concurrent use.
type Handler struct {
	Verifier  Authenticator
	Store     Store
	Functions []*schema.Function
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
		Verifier: v, Store: store, Functions: ticket.Functions,
		Policies: idempotency.Policies{}, Retention: idempotency.DefaultRetention, Logger: logger,
		Now: time.Now, NewID: ticket.NewID,
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

// Door says where a door carries each field of a Call, so that a refusal
// names the field as that caller sent it.
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
		Door: CallbackDoor, Nonce: nonce, Function: req.Function, Arguments: req.Arguments,
		ExternalUserID: req.ExternalUserID, RequestID: req.Metadata[protocol.RequestIDKey], Metadata: req.Metadata,
		CallSource: req.CallSource, ConversationToken: req.ConversationToken, Moment: req.Moment,
	}
}

// entry is the one log line of a call. It never holds the body, the
// arguments, the nonce, the hook key or a stored result.
type entry struct {
	// method is the MCP method of a request that reached no function.
	method   string
	function string
	opKey    string
	outcome  string
	code     string
	cause    error
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
	start := h.Now()
	ctx, cancel := context.WithTimeout(ctx, Deadline)
	defer cancel()
	var e entry
	ans, ok := h.precheck(CallbackDoor, r.Nonce, &e)
	if ok {
		req, p := protocol.Decode(r.Body)
		var c Call
		if p == nil {
			c = CallFromRequest(r.Nonce, req)
		}
		read := h.readUser(ctx, c.ExternalUserID)
		switch ans, ok = h.verify(CallbackDoor, r.Nonce, &e); {
		case !ok:
		case p != nil:
			ans = h.refuse(&e, p)
		default:
			ans = h.perform(ctx, c, read, &e)
		}
		read.stop()
	}
	h.finish(ctx, CallbackDoor.Name, start, ans, &e)
	return ans
}

// Note records a request a door answered without running a call (an MCP
// handshake, listing or refused envelope): the same log line and metric
// as a call's, with outcome (one of Outcomes), the JSON-RPC method, code
// when it refused, and the HTTP status it answered. start is when the door
// received it, by h.Now.
func (h *Handler) Note(ctx context.Context, d Door, start time.Time, method, outcome, code string, status int) {
	e := entry{method: method, outcome: outcome, code: code}
	h.finish(ctx, d.Name, start, protocol.Answer{Status: status}, &e)
}

// Serve serves a call that a door other than the callback decoded: the
// same pipeline, the same answer.
func (h *Handler) Serve(ctx context.Context, c Call) protocol.Answer {
	start := h.Now()
	ctx, cancel := context.WithTimeout(ctx, Deadline)
	defer cancel()
	var e entry
	ans, ok := h.precheck(c.Door, c.Nonce, &e)
	if ok {
		read := h.readUser(ctx, c.ExternalUserID)
		if ans, ok = h.verify(c.Door, c.Nonce, &e); ok {
			ans = h.perform(ctx, c, read, &e)
		}
		read.stop()
	}
	h.finish(ctx, c.Door.Name, start, ans, &e)
	return ans
}

// userRead is the read of a call's user record, which runs while the
// call's nonce is verified, so that BCrypt's time hides the read's.
type userRead struct {
	done   chan struct{}
	user   identity.User
	err    error
	cancel context.CancelFunc
}

// readUser starts reading the record of id ("": nothing to read) within
// the store's share of ctx's deadline.
func (h *Handler) readUser(ctx context.Context, id string) *userRead {
	r := &userRead{done: make(chan struct{}), cancel: func() {}}
	if id == "" {
		r.err = identity.ErrUnknown
		close(r.done)
		return r
	}
	ctx, r.cancel = storeContext(ctx)
	go func() {
		defer close(r.done)
		r.user, r.err = h.Store.LoadUser(ctx, id)
	}()
	return r
}

// result waits for the read and returns what it found.
func (r *userRead) result() (identity.User, error) {
	<-r.done
	return r.user, r.err
}

// stop ends the read, at once if it still runs (the nonce failed), and
// waits for it: nothing of a call outlives its answer.
func (r *userRead) stop() {
	r.cancel()
	<-r.done
}

func (h *Handler) finish(ctx context.Context, msg string, start time.Time, ans protocol.Answer, e *entry) {
	d := h.Now().Sub(start)
	if e.outcome == "" {
		e.outcome = protocol.StatusError
	}
	if h.Metrics != nil {
		h.Metrics.Observe(e.function, e.outcome, ans.Status, d)
	}
	if h.Logger == nil {
		return
	}
	level := slog.LevelInfo
	if ans.Status >= 500 {
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("outcome", e.outcome),
		slog.Int("status", ans.Status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
	}
	if e.method != "" {
		attrs = append(attrs, slog.String("method", e.method))
	}
	if e.function != "" {
		attrs = append(attrs, slog.String("function", e.function))
	}
	if e.opKey != "" {
		attrs = append(attrs, slog.String("op_key", e.opKey))
	}
	if e.code != "" {
		attrs = append(attrs, slog.String("code", e.code))
	}
	if e.cause != nil {
		// Store errors name operations and AWS error codes, never payloads.
		attrs = append(attrs, slog.String("cause", e.cause.Error()))
	}
	h.Logger.LogAttrs(ctx, level, msg, attrs...)
}

func (h *Handler) deny(e *entry, status int, code, message string) protocol.Answer {
	e.outcome, e.code = OutcomeUnauthorized, code
	if status == http.StatusUnauthorized {
		return protocol.Unauthorized(code, message)
	}
	return protocol.Forbidden(code, message)
}

func (h *Handler) reject(e *entry, code, message string) protocol.Answer {
	e.outcome, e.code = protocol.StatusRejected, code
	return protocol.Reject(code, message)
}

// refuse answers a problem found in the request, a *protocol.RequestError:
// 200 for what the model can fix, 400 for the envelope.
func (h *Handler) refuse(e *entry, err error) protocol.Answer {
	var p *protocol.RequestError
	if !errors.As(err, &p) {
		return h.fail(e, err)
	}
	e.outcome, e.code = protocol.StatusRejected, p.Code
	return protocol.Refuse(p)
}

func (h *Handler) fail(e *entry, err error) protocol.Answer {
	e.cause = err
	if errors.Is(err, idempotency.ErrBusy) {
		e.outcome = protocol.StatusBusy
		return protocol.Busy()
	}
	e.outcome = protocol.StatusError
	return protocol.Internal()
}

// authenticate checks a nonce wholly: its shape and cost, then BCrypt.
// ok is true when it passed; d names where the nonce travels.
func (h *Handler) authenticate(d Door, header string, e *entry) (protocol.Answer, bool) {
	if ans, ok := h.precheck(d, header, e); !ok {
		return ans, false
	}
	return h.verify(d, header, e)
}

// precheck is the part of the nonce check that takes no BCrypt work.
func (h *Handler) precheck(d Door, header string, e *entry) (protocol.Answer, bool) {
	return h.nonceAnswer(d, nonce.Precheck(header, h.Verifier.MaxCost()), e)
}

// verify is the nonce check with BCrypt.
func (h *Handler) verify(d Door, header string, e *entry) (protocol.Answer, bool) {
	return h.nonceAnswer(d, h.Verifier.Verify(header), e)
}

// nonceAnswer maps a nonce check's error to an answer; ok is true when
// it passed.
func (h *Handler) nonceAnswer(d Door, err error, e *entry) (protocol.Answer, bool) {
	switch {
	case err == nil:
		return protocol.Answer{}, true
	case errors.Is(err, nonce.ErrMissing):
		return h.deny(e, http.StatusUnauthorized, "missing_nonce", d.Nonce+" is required: set a hook key on the AIVAX account."), false
	case errors.Is(err, nonce.ErrCost):
		return h.deny(e, http.StatusForbidden, "invalid_nonce", fmt.Sprintf("%s has a BCrypt cost outside %d..%d.", d.Nonce, nonce.MinCost, h.Verifier.MaxCost())), false
	case errors.Is(err, nonce.ErrMalformed):
		return h.deny(e, http.StatusForbidden, "invalid_nonce", d.Nonce+" is not a BCrypt hash."), false
	default:
		return h.deny(e, http.StatusForbidden, "invalid_nonce", d.Nonce+" does not match the hook key."), false
	}
}

// perform runs an authenticated call through the pipeline, with read the
// read of its user's record started beside the nonce's verification.
func (h *Handler) perform(ctx context.Context, c Call, read *userRead, e *entry) protocol.Answer {
	// Only a function of the catalogue is named in the log and the
	// metrics: the caller's text is not, before or after it is checked.
	e.function = UnknownFunction
	fn := h.function(c.Function)
	if fn != nil {
		e.function = fn.Name
	}

	// Identify: the tenant comes from our record, never from the request.
	if c.ExternalUserID == "" {
		return h.reject(e, "missing_user", c.Door.User+" is missing. The application must send the end user's id (the chat session's user or the request's user field); do not invent one.")
	}
	waiting := h.Now()
	user, err := read.result()
	h.debug(ctx, "user record", slog.Float64("waited_ms", float64(h.Now().Sub(waiting).Microseconds())/1000))
	switch {
	case errors.Is(err, identity.ErrUnknown):
		return h.deny(e, http.StatusForbidden, "unknown_user", c.Door.User+" is not a user of this service.")
	case err != nil:
		return h.fail(e, err)
	case !user.Active:
		return h.deny(e, http.StatusForbidden, "user_disabled", "This user is disabled.")
	}

	// Authorize and validate.
	if fn == nil {
		return h.reject(e, "unknown_function", fmt.Sprintf("There is no function %q. The functions are %s.", canonjson.Clip(c.Function), h.functionNames()))
	}
	if !user.Allows(fn.Name) {
		return h.deny(e, http.StatusForbidden, "function_not_granted", "This user may not call "+fn.Name+".")
	}
	// The arguments as the function will act on them: the operation key
	// and the ticket are both made from these, never from c.Arguments.
	args, v := fn.Normalize(c.Arguments)
	if len(v) > 0 {
		msgs := make([]string, len(v))
		for i, x := range v {
			msgs[i] = x.Message
		}
		return h.reject(e, protocol.CodeInvalidArguments, "Fix the arguments and call again: "+strings.Join(msgs, "; ")+".")
	}

	ctx, cancel := storeContext(ctx)
	defer cancel()
	switch fn.Name {
	case ticket.CreateName:
		return h.create(ctx, c, args, fn, user, e)
	case ticket.GetName:
		return h.get(ctx, args, user, e)
	}
	return h.fail(e, fmt.Errorf("function %s has no implementation", fn.Name))
}

// late is the answer of a call whose deadline passed before it could show
// what the store holds (a stored result, a ticket): its user's record was
// read before then, and by now may say otherwise, so nothing is shown and
// the call is answered busy. ok is false while the deadline holds.
func (h *Handler) late(ctx context.Context, e *entry) (protocol.Answer, bool) {
	if ctx.Err() == nil {
		return protocol.Answer{}, false
	}
	return h.fail(e, fmt.Errorf("%w: the deadline passed before the answer", idempotency.ErrBusy)), true
}

// debug writes a debug line. Like the call's line, it never carries the
// body, the arguments, externalUserId, the nonce, the hook key or a stored
// result.
func (h *Handler) debug(ctx context.Context, msg string, attrs ...slog.Attr) {
	if h.Logger != nil {
		h.Logger.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
	}
}

// keep is how long a new operation is kept: the retention, or, for a
// ticket queued for delivery, as long as its delivery may take when that
// is longer (Outbox.Keep), so that deduplication outlives delivery.
func (h *Handler) keep() time.Duration {
	if h.Outbox != nil {
		return max(h.Retention, h.Outbox.Keep())
	}
	return h.Retention
}

// storeContext keeps ResponseReserve of the caller's deadline for answering.
func storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, dl.Add(-ResponseReserve))
	}
	return context.WithCancel(ctx)
}

func (h *Handler) function(name string) *schema.Function {
	for _, f := range h.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func (h *Handler) functionNames() string {
	names := make([]string, len(h.Functions))
	for i, f := range h.Functions {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// answerBody is a stored result read back from the store with the
// delivery d (when not nil) and "deduplicated" appended, after checking
// that it is a JSON object.
func answerBody(stored []byte, d *delivery.Record, now time.Time, deduplicated bool) ([]byte, error) {
	if _, err := canonjson.Parse(stored, canonjson.Limits{}); err != nil || len(stored) < 2 || stored[0] != '{' || stored[len(stored)-1] != '}' {
		return nil, errors.New("stored result is not a JSON object")
	}
	return withFlag(withDelivery(stored, d, now), deduplicated), nil
}

// createdResult is the stored result of a new ticket, built in canonical
// form directly: its two members are written in RFC 8785 order.
func createdResult(id string) []byte {
	b := make([]byte, 0, 32+len(protocol.StatusCreated)+len(id))
	b = append(b, `{"status":`...)
	b = canonjson.AppendString(b, protocol.StatusCreated)
	b = append(b, `,"ticket_id":`...)
	b = canonjson.AppendString(b, id)
	return append(b, '}')
}

// withFlag appends "deduplicated" to a stored result, a JSON object, so the
// first answer and every replay read the same apart from the flag.
func withFlag(stored []byte, deduplicated bool) []byte {
	out := make([]byte, 0, len(stored)+24)
	out = append(out, stored[:len(stored)-1]...)
	if len(stored) > 2 {
		out = append(out, ',')
	}
	if deduplicated {
		return append(out, `"deduplicated":true}`...)
	}
	return append(out, `"deduplicated":false}`...)
}

// create serves create_ticket for user with args, the call's normalized
// arguments.
func (h *Handler) create(ctx context.Context, c Call, args map[string]any, fn *schema.Function, user identity.User, e *entry) protocol.Answer {
	rid := c.RequestID
	if p := protocol.CheckRequestID(rid, c.Door.RequestID); p != nil {
		return h.refuse(e, p)
	}
	pol := h.Policies.For(fn.Name)
	h.debug(ctx, "key policy", slog.String("function", fn.Name), slog.String("policy", string(pol)))
	key, err := idempotency.Derive(pol, idempotency.Operation{Tenant: user.Tenant, RequestID: rid, Function: fn.Name, Arguments: args})
	if err != nil {
		return h.fail(e, err)
	}
	if len(key.Arguments) > protocol.MaxArgumentsBytes {
		return h.reject(e, protocol.CodeTooLarge, fmt.Sprintf("The arguments are %d bytes; the limit is %d. Shorten the description.", len(key.Arguments), protocol.MaxArgumentsBytes))
	}
	e.opKey = key.ID

	now := h.Now().UTC()
	t := ticket.FromArguments(args)
	t.ID, t.Tenant, t.UserID, t.CreatedAt = h.NewID(), user.Tenant, user.ExternalID, now
	t.OperationKey, t.RequestID = key.ID, rid
	stored := createdResult(t.ID)
	rec := idempotency.Record{
		Key: key.ID, UserID: user.ExternalID, Tenant: user.Tenant, Function: fn.Name,
		State: idempotency.Completed, Fingerprint: key.Fingerprint, TicketID: t.ID,
		Result: stored, CreatedAt: now, ExpiresAt: now.Add(h.keep()),
	}

	out := h.queued(key.ID, t.ID, now)
	existing, taken, err := h.Store.Create(ctx, rec, t, out)
	switch {
	case err != nil:
		return h.fail(e, err)
	case !taken:
		e.outcome = protocol.StatusCreated
		if out != nil {
			if d := h.Outbox.Committed(ctx, t.ID); d != nil {
				out = d
			}
		}
		return protocol.Answer{Status: http.StatusOK, Body: withFlag(withDelivery(stored, out, h.Now()), false)}
	}

	switch idempotency.Replay(&existing, user.ExternalID, key.Fingerprint) {
	case idempotency.Conflict:
		return h.deny(e, http.StatusForbidden, "request_id_conflict", "This request_id already belongs to another user's operation.")
	case idempotency.InProgress:
		e.outcome = protocol.StatusInProgress
		return protocol.InProgress()
	case idempotency.Reused:
		if ans, late := h.late(ctx, e); late {
			return ans
		}
		return h.reject(e, "request_id_reused", fmt.Sprintf(
			"This request_id already created ticket %s with different arguments. Do not call %s again with changed arguments: the ticket exists. A different ticket needs a new request from the user.",
			existing.TicketID, fn.Name))
	}
	var d *delivery.Record
	if h.Outbox != nil {
		// The answer carries the delivery as it is now: one more read,
		// only when a destination is configured.
		if d, err = h.Store.Delivery(ctx, existing.TicketID); err != nil {
			return h.fail(e, err)
		}
	}
	body, err := answerBody(existing.Result, d, h.Now(), true)
	if err != nil {
		return h.fail(e, fmt.Errorf("operation %s: %w", existing.Key, err))
	}
	if ans, late := h.late(ctx, e); late {
		return ans
	}
	e.outcome = OutcomeDeduplicated
	return protocol.Answer{Status: http.StatusOK, Body: body}
}

type found struct {
	Status string     `json:"status"`
	Ticket ticketView `json:"ticket"`
}

// ticketView is what get_ticket discloses: the ticket and, when it has
// one, its delivery.
type ticketView struct {
	ticket.View
	Delivery *delivery.View `json:"delivery,omitempty"`
}

func (h *Handler) get(ctx context.Context, args map[string]any, user identity.User, e *entry) protocol.Answer {
	id, _ := args["ticket_id"].(string)
	t, d, err := h.Store.ReadTicket(ctx, id)
	if err != nil {
		return h.fail(e, err)
	}
	if ans, late := h.late(ctx, e); late {
		return ans
	}
	// Another tenant's ticket is indistinguishable from a missing one.
	if t == nil || t.Tenant != user.Tenant {
		e.outcome, e.code = protocol.StatusNotFound, "ticket_not_found"
		return protocol.NotFound("ticket_not_found", "No ticket "+id+" is visible to this user. Check the ticket_id that create_ticket returned.")
	}
	e.outcome = protocol.StatusFound
	v := ticketView{View: t.View()}
	if d != nil {
		dv := d.View(h.Now())
		v.Delivery = &dv
	}
	return protocol.JSON(http.StatusOK, found{Status: protocol.StatusFound, Ticket: v})
}
