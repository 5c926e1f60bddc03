package idempotency

import (
	"errors"
	"time"
)

// State of a claimed operation.
type State string

const (
	// Completed operations have a stored result.
	Completed State = "completed"
	// Pending operations were claimed but their effect is not known to have
	// happened. oncecall never takes one over: it answers in_progress until
	// someone reconciles it.
	Pending State = "pending"
)

// DefaultRetention is the deduplication window unless configured: a claimed
// operation expires this long after it was created (Record.ExpiresAt).
const DefaultRetention = 24 * time.Hour

// ErrBusy is returned by a store that could not decide a claim in time
// (contention or throttling that outlasted its retries). The caller may retry
// the same operation.
var ErrBusy = errors.New("idempotency: store busy")

// Record is a claimed operation.
type Record struct {
	Key         string
	UserID      string
	Tenant      string
	Function    string
	State       State
	Fingerprint string
	// TicketID names the effect, so a refusal can point at it.
	TicketID string
	// Result is the JSON object answered to the first call, without the
	// "deduplicated" member.
	Result []byte
	// CreatedAt is when the operation was claimed.
	CreatedAt time.Time
	// ExpiresAt ends the deduplication window; zero means never.
	ExpiresAt time.Time
	// UserVersion is the version of UserID's record the call that claimed
	// it read (identity.User.Vouches).
	UserVersion int64
	// Token names the one attempt to claim it, fresh for each (a store
	// mints it when empty): a store whose write lost its answer tells its
	// own claim from another call's of the same key by it, never by a
	// clock or by the effect's id (the first ticket of a request id has
	// the same id for every call).
	Token string
}

// Live reports whether r still deduplicates at now. An expired record that
// the store has not deleted yet counts as absent: the window is exact.
func (r *Record) Live(now time.Time) bool {
	return r.ExpiresAt.IsZero() || !now.After(r.ExpiresAt)
}

// Verdict is what a repeated call gets.
type Verdict int

const (
	// Duplicate means: answer the stored result with deduplicated: true.
	Duplicate Verdict = iota
	// Conflict means the key belongs to another user; disclose nothing.
	Conflict
	// InProgress means the operation is pending; do not run it again.
	InProgress
	// Reused means the same request_id, different arguments, under PolicyRequest.
	Reused
)

// Replay decides what a call by userID with argument fingerprint fp gets when
// the operation's key is already claimed by r.
func Replay(r *Record, userID, fp string) Verdict {
	switch {
	case r.UserID != userID:
		return Conflict
	case r.State != Completed:
		return InProgress
	case r.Fingerprint != fp:
		return Reused
	default:
		return Duplicate
	}
}
