package identity

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// User is one of oncecall's user records.
type User struct {
	// ExternalID is the id AIVAX sends as context.externalUserId.
	ExternalID string
	// Tenant is the tenant the user belongs to. Idempotency keys and ticket
	// visibility are scoped to it.
	Tenant string
	// Name is a display name.
	Name string
	// Active is false for a disabled user, who may call nothing.
	Active bool
	// Functions lists the functions the user may call.
	Functions []string
}

// Allows reports whether u is active and may call function fn.
func (u *User) Allows(fn string) bool {
	return u.Active && slices.Contains(u.Functions, fn)
}

// Errors of user resolution.
var (
	// ErrUnknown is returned by a Source and by Directory.Lookup when no
	// record has the id.
	ErrUnknown = errors.New("identity: unknown user")
	// ErrRevoked is returned by a store when the user check inside a
	// transaction failed: the user was disabled, moved to another tenant or
	// lost the function since the record was cached.
	ErrRevoked = errors.New("identity: user no longer authorized")
)

// Revoked is the error a store returns when the user check inside a write
// failed. It matches ErrRevoked with errors.Is.
type Revoked struct {
	// User is the record as the store held it when the check failed, when
	// the store returned it with the cancellation; nil when the record is
	// gone or the store does not return it.
	User *User
}

func (e *Revoked) Error() string { return ErrRevoked.Error() }

// Is reports whether target is ErrRevoked.
func (e *Revoked) Is(target error) bool { return target == ErrRevoked }

// Source loads user records. The dynamo package implements it.
type Source interface {
	// LoadUser returns the record for externalID, or ErrUnknown.
	LoadUser(ctx context.Context, externalID string) (User, error)
}

// MaxCached bounds the number of records a Directory keeps.
const MaxCached = 10_000

// Directory looks users up through a Source and caches what it finds for TTL.
// A zero TTL disables caching. It is safe for concurrent use.
type Directory struct {
	src Source
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]entry
}

type entry struct {
	user    User
	expires time.Time
}

// NewDirectory returns a Directory over src. now may be nil (time.Now).
func NewDirectory(src Source, ttl time.Duration, now func() time.Time) *Directory {
	if now == nil {
		now = time.Now
	}
	return &Directory{src: src, ttl: ttl, now: now, entries: map[string]entry{}}
}

// Lookup returns the record for externalID from the cache or the Source,
// and whether it came from the cache: a cached record may be up to the TTL
// old. Unknown users are not cached.
func (d *Directory) Lookup(ctx context.Context, externalID string) (u User, cached bool, err error) {
	now := d.now()
	if d.ttl > 0 {
		d.mu.Lock()
		e, ok := d.entries[externalID]
		d.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.user, true, nil
		}
	}
	u, err = d.src.LoadUser(ctx, externalID)
	if err != nil {
		return User{}, false, err
	}
	d.Remember(u)
	return u, false, nil
}

// Reload drops externalID from the cache and loads it again. Callers use it
// before refusing on a cached record, so that a grant or re-activation takes
// effect at once rather than when the entry expires.
func (d *Directory) Reload(ctx context.Context, externalID string) (User, error) {
	d.Forget(externalID)
	u, _, err := d.Lookup(ctx, externalID)
	return u, err
}

// Remember caches u, for example after a store read returned a fresh record.
func (d *Directory) Remember(u User) {
	if d.ttl <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.entries[u.ExternalID]; !ok && len(d.entries) >= MaxCached {
		now := d.now()
		for k, e := range d.entries {
			if !now.Before(e.expires) {
				delete(d.entries, k)
			}
		}
		for k := range d.entries {
			if len(d.entries) < MaxCached {
				break
			}
			delete(d.entries, k)
		}
	}
	d.entries[u.ExternalID] = entry{user: u, expires: d.now().Add(d.ttl)}
}

// Forget drops externalID from the cache, so the next Lookup reloads it.
func (d *Directory) Forget(externalID string) {
	d.mu.Lock()
	delete(d.entries, externalID)
	d.mu.Unlock()
}

// Len reports how many records are cached.
func (d *Directory) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
