// Package loadtest drives a callback server over HTTP on loopback with many
// concurrent calls and checks what it answered against what it stored.
//
// Mixed plans a run of create_ticket operations spread over users and
// tenants, each called several times with its arguments' members in a
// different order every time, mixed with reads and invalid calls. Run sends
// the calls concurrently, and sends a call again after a busy answer, as
// the application would (BusyRetries); StoredTickets reads the run's tickets back from
// the store; Tally compares the two: every answered ticket must exist,
// every stored ticket must have been answered, every operation must have
// exactly one ticket and one created answer.
//
// Start runs the real oncecall server binary on free loopback ports, for
// tests and for make stress (internal/bench/cmd/oncecall-load).
package loadtest
