// Package localdb runs an embedded DynamoDB-compatible server
// (github.com/truora/minidyn) on a loopback port, for `make run`, local
// invokes and tests, and holds the demo users that local runs seed.
//
// The server keeps everything in memory: its data is gone when the process
// ends. It implements the DynamoDB JSON protocol, so the real AWS SDK client
// and the AWS CLI talk to it unchanged.
package localdb
