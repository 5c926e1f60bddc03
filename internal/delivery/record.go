package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"
)

// State is where a ticket's delivery stands.
type State string

// States a delivery is stored in.
const (
	// Queued: waiting for its first attempt or a scheduled retry.
	Queued State = "queued"
	// Delivered: the destination has the ticket; the Receipt names it.
	Delivered State = "delivered"
	// Failed: the destination certainly does not have the ticket and will
	// not get it without a person (a definite refusal, or every attempt
	// spent without one that might have created it).
	Failed State = "failed"
	// Uncertain: the destination may have the ticket and nothing automatic
	// can tell; a person must check and settle it.
	Uncertain State = "uncertain"
	// Abandoned: a person closed it; nothing more will be attempted.
	Abandoned State = "abandoned"
)

// InProgress is never stored: it is how a Queued delivery whose attempt
// holds a live lease is reported.
const InProgress State = "in_progress"

// States lists the stored states, for metrics and listings.
var States = []State{Queued, Delivered, Failed, Uncertain, Abandoned}

// Valid reports whether s is a stored state.
func (s State) Valid() bool { return slices.Contains(States, s) }

// NeedsPerson reports whether a delivery in s waits for an operator.
func (s State) NeedsPerson() bool { return s == Failed || s == Uncertain }

// Final reports whether nothing will be attempted in s without a person.
func (s State) Final() bool { return s != Queued }

// Record is the delivery half of a ticket item: the outbox record.
type Record struct {
	State State
	// Destination is the destination's kind when the ticket was created.
	Destination string
	// Key is the idempotency key of the ticket (see Key); KeyFor is the
	// one an attempt sends.
	Key string
	// Attempts counts the attempts started (leases taken).
	Attempts int
	// LeaseOwner and LeaseUntil hold the attempt in flight, if any. An
	// empty owner means no attempt holds the delivery.
	LeaseOwner string
	LeaseUntil time.Time
	// Sending names the attempt (its lease's owner) that was about to
	// send a create, until that attempt records its result. A lease that
	// ended without a result counts as an attempt that may have sent only
	// when the mark names it.
	Sending string
	// MaybeSent is true once any attempt may have created the ticket at the
	// destination without oncecall learning its id: an ambiguous outcome,
	// or an attempt whose worker died holding the lease after it was about
	// to send (Sending).
	MaybeSent bool
	// FirstSent is when the key was first used; the destination's
	// deduplication window counts from it.
	FirstSent time.Time
	// LastSent is the latest time a request that may have created the
	// ticket could have reached the destination; a lookup is trusted only
	// Policy.ResendWait after it.
	LastSent time.Time
	// NextAt is the earliest time of the next attempt.
	NextAt time.Time
	// SafeAfter is when a person may say the helpdesk has no such ticket
	// (a not-created settlement, which sends it again, see KeyFor):
	// ResendWait after the last request that may have created it, once no
	// request can still be running there and its search shows what it
	// made. Zero before any request.
	SafeAfter time.Time
	// Since is when the delivery entered its current state (for Queued:
	// when the ticket was queued). Listings are ordered by it.
	Since time.Time
	// LastCode and LastStatus say what the last attempt established.
	LastCode   string
	LastStatus int
	// Reason is the destination's refusal, or the operator's reason for a
	// settlement. Never logged.
	Reason string
	// Receipt names the ticket in the destination once delivered.
	Receipt     Receipt
	DeliveredAt time.Time
	// Version is incremented by every change, so that an operator's
	// decision can be made conditional on the record they read.
	Version int64
	// Audit lists the operators' decisions, oldest first.
	Audit []Decision
}

// Decision is one operator settlement, as audited on the ticket.
type Decision struct {
	Actor
	At     time.Time
	Action string
	Reason string
	// From and To are the states replaced and set.
	From, To State
	// Receipt is the helpdesk reference recorded, for "delivered".
	Receipt Receipt
	// Note says what the decision did besides changing the state (such
	// as resetting the attempts), in the store's words.
	Note string
	// Proof is what only the decision role can make over the entry and
	// its ticket (AuditProof): a KMS ciphertext, empty where none was
	// made. It is checked, never believed: see AuditProof.
	Proof []byte
}

// Actor is who made a decision, as its audit records it.
type Actor struct {
	// Who is the identity: the caller's AWS ARN, as STS answered for the
	// credentials the decision was made with; off AWS a name the person
	// gave, which nothing verifies.
	Who string
	// Via says where Who came from (oncecall-admin's words, such as
	// aws_caller_identity or -operator), and Verified whether AWS
	// established it.
	Via      string
	Verified bool
	// SourceIdentity is the AWS session's sts:SourceIdentity, where the
	// tool knew it.
	SourceIdentity string
	// Operator is a name the person gave beside a verified identity: a
	// label, never the identity.
	Operator string
}

// Reported is the state a caller is told: InProgress for a queued delivery
// whose lease is live at now, the stored state otherwise.
func (r *Record) Reported(now time.Time) State {
	if r.State == Queued && r.LeaseOwner != "" && now.Before(r.LeaseUntil) {
		return InProgress
	}
	return r.State
}

// Leased reports whether an attempt holds a live lease at now.
func (r *Record) Leased(now time.Time) bool {
	return r.LeaseOwner != "" && now.Before(r.LeaseUntil)
}

// keyPrefix names the derivation of Key; a change of derivation changes it.
const keyPrefix = "oncecall-d1-"

// Key is the idempotency key sent to the destination for the ticket
// ticketID created by operation opKey. It is derived from the operation key
// and the ticket id together: the operation key alone can recur once its
// retention window has passed (a new operation with the same request and
// arguments), and a destination that still remembered it would answer the
// new operation with the old ticket. 76 characters, within every limit
// seen (Zendesk: 255).
func Key(opKey, ticketID string) string {
	h := sha256.New()
	h.Write([]byte(keyPrefix))
	h.Write([]byte(opKey))
	h.Write([]byte{0})
	h.Write([]byte(ticketID))
	return keyPrefix + hex.EncodeToString(h.Sum(nil))
}

// ActionNotCreated is the audit action of an operator's decision that the
// destination does not have the ticket, after which it is sent again.
const ActionNotCreated = "settle.not_created"

// Resends counts the operator's not-created decisions in the audit: the
// times the ticket was queued again because the destination did not have
// it.
func (r *Record) Resends() int {
	n := 0
	for _, d := range r.Audit {
		if d.Action == ActionNotCreated {
			n++
		}
	}
	return n
}

// KeyFor is the idempotency key an attempt sends to a destination with
// caps. It is Key, whatever happened, where the destination deduplicates
// successes only: were the operator wrong and the ticket there after all,
// the same key finds it instead of making a second one. Where the
// destination replays errors (caps.ReplaysErrors), a key that once got an
// error gets only that error again, and a resend under it could never
// succeed: after the n-th not-created decision the attempts send
// ResendKey(Key, n), one key for all the attempts of that resend.
func (r *Record) KeyFor(caps Capabilities) string {
	if n := r.Resends(); caps.ReplaysErrors && n > 0 {
		return ResendKey(r.Key, n)
	}
	return r.Key
}

// Keys lists every key the delivery's attempts may have sent, Key first:
// Key and the key of each resend a destination that replays errors got.
func (r *Record) Keys() []string {
	keys := []string{r.Key}
	for n := 1; n <= r.Resends(); n++ {
		keys = append(keys, ResendKey(r.Key, n))
	}
	return keys
}

// ResendKey is the key of the n-th resend (n ≥ 1) of the ticket whose key
// is key, to a destination that replays errors: derived from both, as
// long as Key (76 characters) and never equal to it or to another
// resend's.
func ResendKey(key string, n int) string {
	h := sha256.New()
	h.Write([]byte(keyPrefix + "resend"))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(n)))
	return keyPrefix + hex.EncodeToString(h.Sum(nil))
}

// auditProofVersion names the encoding of AuditProof; a change of
// encoding changes it.
const auditProofVersion = "oncecall-audit-v1"

// AuditProof is what decision d on ticket ticketID is proven over: a
// version tag and the SHA-256, in hex, of every field the audit entry
// shows (all but Proof), in a fixed order. Whatever an entry shows that a
// proof does not cover could be changed after it was made: a new field
// of Decision must be added here.
func AuditProof(ticketID string, d Decision) (version, digest string) {
	h := sha256.New()
	for _, f := range []string{
		ticketID, strconv.FormatInt(d.At.UnixMilli(), 10), d.Who, d.Via, strconv.FormatBool(d.Verified), d.SourceIdentity, d.Operator,
		d.Action, string(d.From), string(d.To), d.Reason, d.Receipt.ID, d.Receipt.URL, d.Note,
	} {
		// Each field with its length first: no two lists of fields
		// encode alike.
		h.Write([]byte(strconv.Itoa(len(f)) + ":" + f + ";"))
	}
	return auditProofVersion, hex.EncodeToString(h.Sum(nil))
}
