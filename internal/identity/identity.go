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
}

// Allows reports whether u is active and may call function fn.
func (u *User) Allows(fn string) bool {
	return u.Active && slices.Contains(u.Functions, fn)
}

// ErrUnknown is returned by a store when no record has the id.
var ErrUnknown = errors.New("identity: unknown user")
