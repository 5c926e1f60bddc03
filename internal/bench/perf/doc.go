// Package perf runs oncecall's bounded loopback measurements for
// `make bench`: the floor ratios, throughput, heap growth, cold start under
// the Runtime Interface Emulator and the side-by-side run against the
// Powertools for AWS Lambda (TypeScript) idempotency utility.
//
// Every run talks only to servers it starts on 127.0.0.1, is bounded in
// calls and in time, and stops what it started. Timings are reported as
// ratios against a baseline measured in the same run. The store is
// dynoxide (internal/local/localdb) behind a Front that counts requests per
// table and operation at the store side and sums the capacity the store's
// answers report. The capacity run (Capacity) reports those units per kind
// of call, oncecall's and the Powertools peer's, measured on one store in
// one run.
package perf
