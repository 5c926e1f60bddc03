// Package identity resolves the caller of a callback to one of oncecall's own
// user records.
//
// AIVAX's context.externalUserId is an identifier to look up, never a proof;
// the tenant always comes from the record found, never from the request. A
// Directory caches records for a short time so that a warm call needs no
// extra store round trip. The cache never decides alone: Lookup says when a
// record came from it, a caller reloads such a record before refusing on it
// (so a grant takes effect at once), and every write and every read of
// stored data re-checks the record inside the store's own transaction (so a
// revocation does).
package identity
