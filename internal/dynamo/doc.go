// Package dynamo stores oncecall's users, operations and tickets in one
// DynamoDB table.
//
// Every item has a single string partition key, pk, prefixed by its kind:
//
//	user#<externalUserId>   a user record (tenant, active, granted functions)
//	op#<operation key>      a claimed operation (state, result, fingerprint, expires_at)
//	ticket#<ticket id>      a ticket (no expiry)
//	config#ids              the id key that names the first ticket of each
//	                        user's request id (FirstTicketID)
//
// Create claims an operation and writes its ticket in one TransactWriteItems:
// a Put of the operation that succeeds only if the key is absent or
// expired, and the ticket's insert (an Update that succeeds only if its id
// is free). Both commit or neither does; whether the user may make the call
// is decided before, from the record LoadUser read. The operation's expires_at is the table's TTL attribute and the
// deduplication window; an expired operation the TTL sweeper has not deleted
// yet is overwritten, so the window is exact.
//
// Global secondary indexes serve operators and the delivery sweep:
// LookupIndex (lk, lk_sort; keys only) finds a ticket by tenant and request
// id and lists a tenant's users, and AttentionIndex (attn_shard, attn_due)
// lists, sparsely, the tickets whose delivery needs attention, each state
// spread over AttentionShards partition keys and sorted by when each entry
// is due. LegacyAttentionIndex (attn, attn_at) is the attention index of
// earlier versions, emptied by Store.Relist. EnsureTable creates the table
// with all three, or adds those a table lacks. Admin is
// the operator's side of the store (oncecall-admin); the deployed functions
// never use it.
//
// Every request a client built with Options sends asks for
// ReturnConsumedCapacity INDEXES (AskCapacity), so every answer says what
// the call consumed on the table and on each index; a Counter sums those
// answers per operation (Capacity), which is how the benchmarks measure
// what a call costs instead of computing it.
package dynamo
