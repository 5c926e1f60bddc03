// Package ticket is oncecall's example domain: support tickets, and the two
// Protocol Functions that create and read them.
//
// It knows nothing of DynamoDB, HTTP or AIVAX's envelope; the callback
// package drives it and the dynamo package stores it.
package ticket
