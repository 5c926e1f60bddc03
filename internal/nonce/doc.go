// Package nonce verifies the X-Request-Nonce header that AIVAX sends with a
// Protocol Function callback when the account has a hook key.
//
// The nonce is a BCrypt hash of the plain hook key, made fresh for each call.
// A match proves that the caller knows the hook key; it does not sign the
// body and does not prevent replay. Because the cost factor is chosen by
// whoever made the hash, a Verifier checks the hash's shape and cost before
// doing any BCrypt work: a cost-31 hash would otherwise take days of CPU.
package nonce
