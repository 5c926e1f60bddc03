// Package helpdesk is a local helpdesk for development and tests: a real
// HTTP server that speaks both oncecall's webhook contract (POST and GET
// /tickets) and the shape of Zendesk's ticket API (/api/v2/tickets), holds
// the tickets it is sent, and misbehaves on request.
//
// Its capabilities (deduplicating by Idempotency-Key within a window,
// replaying a key's error answer to every later create with that key as
// Stripe does, lookup by external id, a lag before a new ticket is visible
// to lookups)
// are set at Start and can be changed while it runs. Faults are injected
// for the next requests of a kind (create or lookup): the answer lost after
// creating, a 5xx (or any status) before or after creating, 429 with
// Retry-After, an answer slower than the client waits, a create held past
// its client's timeout and made all the same (late), a connection reset,
// connection refused (nothing listens on the main address for a while; the
// control API stays reachable on an address of its own), and a lookup that
// ignores its ?external_id= filter and lists every ticket. Everything is
// reachable from Go (Server's methods) and over HTTP under /_helpdesk/ for
// people using curl, and the server can be inspected: every ticket with its
// external id, idempotency key and how many create requests carried that
// key, and counts of requests and creations.
//
// It is never deployed: internal/local/cmd/oncecall-helpdesk serves it standalone, `make
// run` starts it in-process, and the adapters' tests run against it on a
// loopback port. It keeps everything in memory and checks credentials only
// when it is given some.
package helpdesk
