// Package callback serves AIVAX Protocol Function callbacks exactly once per
// operation.
//
// Handler.Call takes the nonce header and the body of one callback and walks
// it through the same steps every time: check the nonce's shape and cost,
// verify it with BCrypt while the user's record is read from the store
// (strongly consistent, on every call: no cache), check the user and the
// function, validate the arguments, derive the operation key, and hand the
// claim and the ticket to the Store in one transaction. Every step that
// refuses answers before anything is written or any stored result is
// disclosed, and nothing is disclosed after the call's Deadline, which is
// what makes a revocation final after RevocationWait. Transport adapters
// (package httpapi for net/http, package apigw for API Gateway on Lambda)
// only move headers and bodies in and out.
package callback
