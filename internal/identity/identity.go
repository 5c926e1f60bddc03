package identity

import (
	"errors"
	"slices"
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
	// Version is the record's version as read: raised by one by every
	// versioned change of it, 0 for a record no such change has touched.
	Version int64
	// Revoked is the version of the record's last change that took access
	// away (a disable, a function revoked); 0 when none has. It supersedes
	// everything a call did under an earlier version: see Vouches.
	Revoked int64
}

// Vouches reports whether u, the record as it is now, still stands behind
// what a call made under version v of it in tenant (a ticket, a stored
// result): u is active, in tenant, and no change that took access away
// came after v. A write that reached the store late (held in the network,
// or in a frozen execution environment) carries the version its call
// read, so it is judged by the record as it is when it is used, whenever
// it landed.
func (u *User) Vouches(tenant string, v int64) bool {
	return u.Active && u.Tenant == tenant && u.Revoked <= v
}

// Allows reports whether u is active and may call function fn.
func (u *User) Allows(fn string) bool {
	return u.Active && slices.Contains(u.Functions, fn)
}

// ErrUnknown is returned by a store when no record has the id.
var ErrUnknown = errors.New("identity: unknown user")
