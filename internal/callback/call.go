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
	"github.com/oncecall/oncecall/internal/ticket"
)

// call is one call on its way through a Handler, from the door's request
// to its answer: what each step reads and what it adds for the next. Its
// methods are the steps. The Handler's fields, set once at start-up, are
// reached through h; nothing here outlives the call.
type call struct {
	h *Handler
	// door is the door the call came by; msg is its log line's message.
	door Door
	msg  string
	// start is when the door handed the call over, by h.Now.
	start time.Time
	// in is the call as the door decoded it (only its Nonce until then).
	in Call
	// read is the read of the caller's record, started beside the nonce's
	// verification; user is what it found, once the call is identified.
	read *userRead
	user identity.User
	// tool is the tool called, once found among the Handler's, and args
	// its arguments as it will act on them, once validated.
	tool *Tool
	args map[string]any
	// log is the call's one log line.
	log entry
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

// begin starts a call that came by door d.
func (h *Handler) begin(d Door) *call {
	return &call{
		h:     h,
		door:  d,
		msg:   d.Name,
		start: h.Now(),
	}
}

// callback runs a callback's request: the nonce's checks that take no
// BCrypt work, then the body decoded only to know whose record to read
// while BCrypt verifies the nonce, then the pipeline.
func (c *call) callback(ctx context.Context, r Request) protocol.Answer {
	c.in.Nonce = r.Nonce
	if ans, ok := c.precheck(); !ok {
		return ans
	}
	req, err := protocol.Decode(r.Body)
	if err == nil {
		c.in = CallFromRequest(r.Nonce, req)
	}
	c.startRead(ctx)
	defer c.read.stop()
	if ans, ok := c.verify(); !ok {
		return ans
	}
	if err != nil {
		return c.refuse(err)
	}
	return c.perform(ctx)
}

// serve runs a call a door decoded: the nonce's checks, with the caller's
// record read while BCrypt verifies the nonce, then the pipeline.
func (c *call) serve(ctx context.Context) protocol.Answer {
	if ans, ok := c.precheck(); !ok {
		return ans
	}
	c.startRead(ctx)
	defer c.read.stop()
	if ans, ok := c.verify(); !ok {
		return ans
	}
	return c.perform(ctx)
}

// userRead is the read of a call's user record, which runs while the
// call's nonce is verified, so that BCrypt's time hides the read's.
type userRead struct {
	done   chan struct{}
	user   identity.User
	err    error
	cancel context.CancelFunc
}

// startRead starts reading the record of the caller's external user id
// ("": nothing to read) within the store's share of ctx's deadline.
func (c *call) startRead(ctx context.Context) {
	r := &userRead{done: make(chan struct{}), cancel: func() {}}
	c.read = r
	id := c.in.ExternalUserID
	if id == "" {
		r.err = identity.ErrUnknown
		close(r.done)
		return
	}
	ctx, r.cancel = storeContext(ctx)
	go func() {
		defer close(r.done)
		r.user, r.err = c.h.Store.LoadUser(ctx, id)
	}()
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

// finish writes the call's log line and metric for its answer ans.
func (c *call) finish(ctx context.Context, ans protocol.Answer) {
	h, e := c.h, &c.log
	d := h.Now().Sub(c.start)
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
	h.Logger.LogAttrs(ctx, level, c.msg, attrs...)
}

// deny answers a caller who may not make the call: 401 for a missing
// nonce, 403 otherwise.
func (c *call) deny(status int, code, message string) protocol.Answer {
	c.log.outcome, c.log.code = OutcomeUnauthorized, code
	if status == http.StatusUnauthorized {
		return protocol.Unauthorized(code, message)
	}
	return protocol.Forbidden(code, message)
}

// reject answers a call the model can correct.
func (c *call) reject(code, message string) protocol.Answer {
	c.log.outcome, c.log.code = protocol.StatusRejected, code
	return protocol.Reject(code, message)
}

// refuse answers a problem found in the request, a *protocol.RequestError:
// 200 for what the model can fix, 400 for the envelope.
func (c *call) refuse(err error) protocol.Answer {
	var p *protocol.RequestError
	if !errors.As(err, &p) {
		return c.fail(err)
	}
	c.log.outcome, c.log.code = protocol.StatusRejected, p.Code
	return protocol.Refuse(p)
}

// fail answers a call the store could not serve: busy when trying again
// may help, an internal error otherwise.
func (c *call) fail(err error) protocol.Answer {
	c.log.cause = err
	if errors.Is(err, idempotency.ErrBusy) {
		c.log.outcome = protocol.StatusBusy
		return protocol.Busy()
	}
	c.log.outcome = protocol.StatusError
	return protocol.Internal()
}

// authenticate checks the call's nonce wholly: its shape and cost, then
// BCrypt. ok is true when it passed.
func (c *call) authenticate() (protocol.Answer, bool) {
	if ans, ok := c.precheck(); !ok {
		return ans, false
	}
	return c.verify()
}

// precheck is the part of the nonce check that takes no BCrypt work.
func (c *call) precheck() (protocol.Answer, bool) {
	return c.nonceAnswer(nonce.Precheck(c.in.Nonce, c.h.Verifier.MaxCost()))
}

// verify is the nonce check with BCrypt.
func (c *call) verify() (protocol.Answer, bool) {
	return c.nonceAnswer(c.h.Verifier.Verify(c.in.Nonce))
}

// nonceAnswer maps a nonce check's error to an answer that names where the
// call's door carries the nonce; ok is true when it passed.
func (c *call) nonceAnswer(err error) (protocol.Answer, bool) {
	where := c.door.Nonce
	switch {
	case err == nil:
		return protocol.Answer{}, true
	case errors.Is(err, nonce.ErrMissing):
		return c.deny(http.StatusUnauthorized, "missing_nonce", where+" is required: set a hook key on the AIVAX account."), false
	case errors.Is(err, nonce.ErrCost):
		return c.deny(http.StatusForbidden, "invalid_nonce", fmt.Sprintf("%s has a BCrypt cost outside %d..%d.", where, nonce.MinCost, c.h.Verifier.MaxCost())), false
	case errors.Is(err, nonce.ErrMalformed):
		return c.deny(http.StatusForbidden, "invalid_nonce", where+" is not a BCrypt hash."), false
	default:
		return c.deny(http.StatusForbidden, "invalid_nonce", where+" does not match the hook key."), false
	}
}

// perform runs an authenticated call through the pipeline: identify,
// authorize and validate, then the function.
func (c *call) perform(ctx context.Context) protocol.Answer {
	// Only a function of the catalogue is named in the log and the
	// metrics: the caller's text is not, before or after it is checked.
	c.log.function = UnknownFunction
	if c.tool = c.h.tool(c.in.Function); c.tool != nil {
		c.log.function = c.tool.Name()
	}
	if ans, ok := c.identify(ctx); !ok {
		return ans
	}
	if ans, ok := c.authorize(); !ok {
		return ans
	}
	ctx, cancel := storeContext(ctx)
	defer cancel()
	return c.tool.run(c, ctx)
}

// identify finds the caller among oncecall's users: the tenant comes from
// our record, never from the request. ok is true when the caller is an
// active user.
func (c *call) identify(ctx context.Context) (protocol.Answer, bool) {
	if c.in.ExternalUserID == "" {
		return c.reject("missing_user", c.door.User+" is missing. The application must send the end user's id (the chat session's user or the request's user field); do not invent one."), false
	}
	waiting := c.h.Now()
	user, err := c.read.result()
	c.h.debug(ctx, "user record", slog.Float64("waited_ms", float64(c.h.Now().Sub(waiting).Microseconds())/1000))
	switch {
	case errors.Is(err, identity.ErrUnknown):
		return c.deny(http.StatusForbidden, "unknown_user", c.door.User+" is not a user of this service."), false
	case err != nil:
		return c.fail(err), false
	case !user.Active:
		return c.deny(http.StatusForbidden, "user_disabled", "This user is disabled."), false
	}
	c.user = user
	return protocol.Answer{}, true
}

// authorize checks that the function exists and the user may call it, and
// validates the arguments. ok is true when the call may go on, with c.args
// the arguments as the function will act on them: the operation key and
// the ticket are both made from these, never from the arguments as sent.
func (c *call) authorize() (protocol.Answer, bool) {
	if c.tool == nil {
		return c.reject("unknown_function", fmt.Sprintf("There is no function %q. The functions are %s.", canonjson.Clip(c.in.Function), c.h.functionNames())), false
	}
	if !c.user.Allows(c.tool.Name()) {
		return c.deny(http.StatusForbidden, "function_not_granted", "This user may not call "+c.tool.Name()+"."), false
	}
	args, v := c.tool.Function.Normalize(c.in.Arguments)
	if len(v) > 0 {
		msgs := make([]string, len(v))
		for i, x := range v {
			msgs[i] = strings.TrimSuffix(x.Message, ".")
		}
		return c.reject(protocol.CodeInvalidArguments, "Fix the arguments and call again: "+strings.Join(msgs, "; ")+"."), false
	}
	c.args = args
	return protocol.Answer{}, true
}

// late is the answer of a call whose deadline passed before it could show
// what the store holds (a stored result, a ticket): its user's record was
// read before then, and by now may say otherwise, so nothing is shown and
// the call is answered busy. ok is false while the deadline holds.
func (c *call) late(ctx context.Context) (protocol.Answer, bool) {
	if ctx.Err() == nil {
		return protocol.Answer{}, false
	}
	return c.fail(fmt.Errorf("%w: the deadline passed before the answer", idempotency.ErrBusy)), true
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

// tool is the Handler's tool called name, nil when there is none.
func (h *Handler) tool(name string) *Tool {
	for _, t := range h.Tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func (h *Handler) functionNames() string {
	names := make([]string, len(h.Tools))
	for i, t := range h.Tools {
		names[i] = t.Name()
	}
	return strings.Join(names, ", ")
}

// storedObject checks that a stored result read back from the store is a
// JSON object, as every result oncecall stores is: a damaged item is
// answered as an internal error, never sent on.
func storedObject(stored []byte) error {
	if _, err := canonjson.Parse(stored, canonjson.Limits{}); err != nil || len(stored) < 2 || stored[0] != '{' || stored[len(stored)-1] != '}' {
		return errors.New("stored result is not a JSON object")
	}
	return nil
}

// result is the Result of a stored result: the object as stored, the
// delivery d as the caller is told of it now (when not nil), and whether
// the call was a replay.
func (c *call) result(stored []byte, d *delivery.Record, deduplicated bool) *protocol.Result {
	r := &protocol.Result{Object: stored, Deduplicated: &deduplicated}
	if d != nil {
		r.Delivery = d.View(c.h.Now())
	}
	return r
}

// replay answers a create_ticket whose key holder, a live operation,
// holds already: its stored result, when the call may see it and asks the
// same as the call that made it.
func (c *call) replay(ctx context.Context, holder idempotency.Record, key idempotency.Key) protocol.Answer {
	verdict := idempotency.Replay(&holder, c.user.ExternalID, key.Fingerprint)
	switch verdict {
	case idempotency.Conflict:
		return c.deny(http.StatusForbidden, "request_id_conflict", "This request_id already belongs to another user's operation.")
	case idempotency.InProgress:
		c.log.outcome = protocol.StatusInProgress
		return protocol.InProgress()
	}
	// The key is derived from the caller's tenant: the holder is of it.
	if !c.user.Vouches(c.user.Tenant, holder.UserVersion) {
		// Made under a version of the record that a later change which
		// took access away supersedes: its ticket is withheld, and
		// nothing of it is shown.
		return c.reject(CodeWithdrawn, fmt.Sprintf(
			"This request_id's operation was made before this user's access was taken away; its ticket is withheld and will not be delivered. Do not call %s again with this request_id: a new ticket needs a new request from the user.", c.tool.Name()))
	}
	if verdict == idempotency.Reused {
		if ans, late := c.late(ctx); late {
			return ans
		}
		return c.reject("request_id_reused", fmt.Sprintf(
			"This request_id already created ticket %s with different arguments. Do not call %s again with changed arguments: the ticket exists. A different ticket needs a new request from the user.",
			holder.TicketID, c.tool.Name()))
	}
	var d *delivery.Record
	if c.h.Outbox != nil {
		// The answer carries the delivery as it is now: one more read,
		// only when a destination is configured.
		var err error
		if d, err = c.h.Store.Delivery(ctx, holder.TicketID); err != nil {
			return c.fail(err)
		}
	}
	if err := storedObject(holder.Result); err != nil {
		return c.fail(fmt.Errorf("operation %s: %w", holder.Key, err))
	}
	if ans, late := c.late(ctx); late {
		return ans
	}
	c.log.outcome = OutcomeDeduplicated
	return protocol.Done(protocol.StatusCreated, c.result(holder.Result, d, true))
}

// CodeWithdrawn refuses the replay of an operation whose user's record no
// longer vouches for it (identity.User.Vouches).
const CodeWithdrawn = "request_id_withdrawn"

// vouched returns t when the record of the user who made it, as it is
// now, vouches for it; nil otherwise. The caller's own record is the one
// this call read; another user's is read.
func (c *call) vouched(ctx context.Context, t *ticket.Ticket) (*ticket.Ticket, error) {
	maker := c.user
	if t.UserID != c.user.ExternalID {
		u, err := c.h.Store.LoadUser(ctx, t.UserID)
		switch {
		case errors.Is(err, identity.ErrUnknown):
			return nil, nil
		case err != nil:
			return nil, err
		}
		maker = u
	}
	if !maker.Vouches(t.Tenant, t.UserVersion) {
		return nil, nil
	}
	return t, nil
}
