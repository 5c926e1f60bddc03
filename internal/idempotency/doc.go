// Package idempotency derives operation keys and decides what a repeated
// operation gets back.
//
// A key is the SHA-256 of the RFC 8785 canonical form of
// [KeyVersion, tenant, request_id, function, arguments], the arguments as
// the function will act on them (schema.Function.Normalize: a spelled-out
// default, a null member or a set in another order is the same operation).
// Under the "request" policy the arguments are left out of the key and kept
// as a fingerprint beside it, so that one request_id can create at most one
// ticket. The tenant always comes from oncecall's own user record. Nothing
// here knows about storage: the store claims a Record atomically with the
// effect, and Replay says what an existing Record means for a caller.
package idempotency
