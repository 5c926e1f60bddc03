// Package identity is the caller of a callback as one of oncecall's own
// user records.
//
// AIVAX's context.externalUserId is an identifier to look up, never a proof;
// the tenant always comes from the record found, never from the request.
// The record is read from the store on every call, with a strongly
// consistent read, and kept nowhere else: no cache and no copy, so a change
// to it (or its deletion) is what every call that starts afterwards sees.
package identity
