// Package localdb runs dynoxide, a DynamoDB emulator that passes the public
// DynamoDB conformance suite, as a child process on a loopback port, for
// `make run`, local invokes and tests, and holds the demo users that local
// runs seed.
//
// The store keeps everything in memory: its data is gone when it stops. It
// speaks the DynamoDB JSON protocol, streams and TTL included, so the real
// AWS SDK client and the AWS CLI talk to it unchanged. What no emulator
// models (transaction conflicts, throttling, answers lost after a write
// applied) is the fault proxy's job, in internal/testing/dynamotest.
//
// The binary is found as Binary says; `make dynoxide` builds the pinned
// version into .tools/ of the repository.
package localdb
