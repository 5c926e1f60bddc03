package secret

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncecall/oncecall/internal/nonce"
)

// Bounds of a Rotating verifier's reads of the hook key secret.
const (
	// RefreshInterval is how long keys read from the secret are used
	// before it is read again: a rotated or revoked key stops (or starts)
	// working in every warm container within it.
	RefreshInterval = 5 * time.Minute
	// RetryInterval is how long after a failed read the next is tried;
	// until then, and until a read succeeds, the last good keys are used.
	RetryInterval = 30 * time.Second
	// ReadTimeout bounds one read of the secret, made while a call waits.
	ReadTimeout = 2 * time.Second
)

// Reader reads the hook keys (HookKeys on a Secrets Manager client, or a
// test's stand-in).
type Reader func(ctx context.Context) (Keys, error)

// Rotating checks nonces against keys that follow the secret: it re-reads
// them every RefreshInterval (keeping the last good keys when a read
// fails or gives keys unfit for use), and refuses the previous key after
// its PreviousUntil. It implements the callback's Authenticator and is
// safe for concurrent use; one read runs at a time, and calls made during
// it use the keys it replaces.
type Rotating struct {
	read    Reader
	maxCost int
	now     func() time.Time
	onError func(error)

	mu    sync.Mutex // held by the one read in progress
	state atomic.Pointer[rotState]
}

type rotState struct {
	keys Keys
	// both accepts the current and the previous key; current only the
	// current one (used once the previous key has ended).
	both, current *nonce.Verifier
	next          time.Time // when to read again
}

// NewRotating returns a Rotating verifier using keys, read at now, until
// the next read; read is how it reads them again. maxCost is as for
// nonce.NewVerifier; now (nil: time.Now) is its clock; onError (may be
// nil) is told of every failed read, in words that never quote a key.
func NewRotating(keys Keys, read Reader, maxCost int, now func() time.Time, onError func(error)) (*Rotating, error) {
	if now == nil {
		now = time.Now
	}
	r := &Rotating{read: read, maxCost: maxCost, now: now, onError: onError}
	st, err := r.prepare(keys)
	if err != nil {
		return nil, err
	}
	st.next = now().Add(RefreshInterval)
	r.state.Store(st)
	return r, nil
}

func (r *Rotating) prepare(k Keys) (*rotState, error) {
	if err := k.Check(false); err != nil {
		return nil, err
	}
	both, err := nonce.NewVerifier(r.maxCost, k.Current, k.Previous)
	if err != nil {
		return nil, err
	}
	current, err := nonce.NewVerifier(r.maxCost, k.Current)
	if err != nil {
		return nil, err
	}
	return &rotState{keys: k, both: both, current: current}, nil
}

// MaxCost reports the highest BCrypt cost accepted.
func (r *Rotating) MaxCost() int { return r.state.Load().both.MaxCost() }

// Verify checks one header value against the keys in force now, first
// reading the secret again if RefreshInterval has passed.
func (r *Rotating) Verify(header string) error {
	now := r.now()
	st := r.state.Load()
	if !now.Before(st.next) && r.mu.TryLock() {
		st = r.refresh(now)
		r.mu.Unlock()
	}
	if st.keys.Previous != "" && !st.keys.PreviousUntil.IsZero() && !now.Before(st.keys.PreviousUntil) {
		return st.current.Verify(header)
	}
	return st.both.Verify(header)
}

// Keys returns the keys in force (for tests and diagnostics; never log
// them).
func (r *Rotating) Keys() Keys { return r.state.Load().keys }

// refresh reads the keys again; the caller holds mu.
func (r *Rotating) refresh(now time.Time) *rotState {
	old := r.state.Load()
	if now.Before(old.next) {
		return old // another call read them meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	k, err := r.read(ctx)
	var st *rotState
	if err == nil {
		st, err = r.prepare(k)
	}
	if err != nil {
		if r.onError != nil {
			r.onError(errors.New("hook key secret not refreshed, the last good keys stay in use: " + err.Error()))
		}
		kept := *old
		kept.next = now.Add(RetryInterval)
		r.state.Store(&kept)
		return &kept
	}
	st.next = now.Add(RefreshInterval)
	r.state.Store(st)
	return st
}
