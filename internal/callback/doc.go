// Package callback serves AIVAX Protocol Function callbacks exactly once per
// operation.
//
// Handler.Call takes the nonce header and the body of one callback and walks
// it through the same steps every time: authenticate the nonce, decode the
// body, identify the user from oncecall's own records, check the function is
// granted, validate the arguments, derive the operation key, and hand the
// claim and the ticket to the Store in one transaction. Every step that
// refuses answers before anything is written or any stored result is
// disclosed. Transport adapters (package httpapi for net/http, package apigw
// for API Gateway on Lambda) only move headers and bodies in and out.
package callback
