package idempotency_test

import (
	"fmt"

	"github.com/oncecall/oncecall/internal/idempotency"
)

// An operation's key covers the tenant, the request id, the function and
// (under the default policy) the arguments: the same operation sent again
// gets the same key, a changed argument a new one, and the request policy
// ignores the arguments.
func ExampleDerive() {
	op := idempotency.Operation{
		Tenant:    "tenant-a",
		RequestID: "op-7",
		Function:  "create_ticket",
		Arguments: map[string]any{"title": "Cannot sign in", "priority": "high"},
	}
	first, _ := idempotency.Derive(idempotency.PolicyArguments, op)
	again, _ := idempotency.Derive(idempotency.PolicyArguments, op)

	changed := op
	changed.Arguments = map[string]any{"title": "Cannot sign in", "priority": "low"}
	other, _ := idempotency.Derive(idempotency.PolicyArguments, changed)
	byRequest, _ := idempotency.Derive(idempotency.PolicyRequest, changed)
	byRequestFirst, _ := idempotency.Derive(idempotency.PolicyRequest, op)

	fmt.Println(len(first.ID), first.ID == again.ID)
	fmt.Println(first.ID == other.ID, first.Fingerprint == other.Fingerprint)
	fmt.Println(byRequest.ID == byRequestFirst.ID, byRequest.Fingerprint == byRequestFirst.Fingerprint)
	fmt.Println(string(first.Arguments))
	// Output:
	// 64 true
	// false false
	// true false
	// {"priority":"high","title":"Cannot sign in"}
}

// Replay decides what a call gets when its key is held already: the
// stored result for the same user and arguments, never another user's.
func ExampleReplay() {
	held := idempotency.Record{UserID: "user-a", State: idempotency.Completed, Fingerprint: "f1"}
	fmt.Println(idempotency.Replay(&held, "user-a", "f1") == idempotency.Duplicate)
	fmt.Println(idempotency.Replay(&held, "user-b", "f1") == idempotency.Conflict)
	fmt.Println(idempotency.Replay(&held, "user-a", "f2") == idempotency.Reused)
	// Output:
	// true
	// true
	// true
}
