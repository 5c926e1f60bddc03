package dynamo

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
)

// AttentionShards is how many index partitions AttentionIndex spreads each
// listed state over. A ticket's shard is a stable hash of its id, so one
// state's writes land on AttentionShards partition keys ("queued#00" to
// "queued#15") instead of one: DynamoDB serves at most 1,000 write units/s
// per partition, and a throttled index throttles the table writes that
// update it. Every read of a state (the sweep, the backlog, the listing)
// queries each shard; changing the number re-shards only the entries
// written after the change, so it is fixed here, not configured.
const AttentionShards = 16

// attentionShard is the shard of ticket id, 0 to AttentionShards-1 (FNV-1a).
func attentionShard(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % AttentionShards)
}

// shardKey is the AttentionIndex partition key of shard n of state st.
func shardKey(st delivery.State, n int) string { return fmt.Sprintf("%s#%02d", st, n) }

// dueKey is the AttentionIndex sort key of ticket id listed at t: the
// time to the millisecond (as the item's times are kept), of one width so that string order is time order, then the id, so
// that no two entries of a shard share a position and one position (a
// cursor) orders every entry of every shard.
func dueKey(t time.Time, id string) string { return indexTime(t.Truncate(time.Millisecond)) + "#" + id }

// dueKeyEnd is above every dueKey at t: ids hold hex digits and '-', all
// below '~'.
func dueKeyEnd(t time.Time) string { return indexTime(t) + "#~" }

// validDueKey reports whether k has the shape dueKey makes.
func validDueKey(k string) bool {
	at, id, ok := strings.Cut(k, "#")
	if !ok || id == "" || strings.ContainsAny(id, "#~") {
		return false
	}
	_, err := time.Parse(indexTimeLayout, at)
	return err == nil
}

// dueTime is the time of a dueKey.
func dueTime(k string) time.Time {
	at, _, _ := strings.Cut(k, "#")
	t, _ := time.Parse(indexTimeLayout, at)
	return t
}

// attentionEntry is where r of ticket id is listed in AttentionIndex: its
// shard and its position, ok false when r is not listed. A queued
// delivery is listed by its next attempt (so the sweep reads the due ones
// as a key range), the others by when they entered their state.
func attentionEntry(id string, r *delivery.Record) (shard, key string, ok bool) {
	st := inAttention(r)
	if st == "" {
		return "", "", false
	}
	at := r.Since
	if st == delivery.Queued {
		at = r.NextAt
	}
	return shardKey(st, attentionShard(id)), dueKey(at, id), true
}

// attentionUpdate returns the clause that lists r of ticket id in
// AttentionIndex (appended to a SET clause) or takes it out (a REMOVE
// clause). Either way it removes the entry of LegacyAttentionIndex, so an
// item written before the index was sharded leaves it at its first change.
func attentionUpdate(id string, r *delivery.Record, names map[string]string, values map[string]types.AttributeValue) string {
	names["#attn"], names["#attnat"] = attrLegacyAttention, attrLegacyAttentionAt
	names["#ash"], names["#adue"] = attrAttention, attrAttentionDue
	if shard, key, ok := attentionEntry(id, r); ok {
		values[":ash"], values[":adue"] = strAV(shard), strAV(key)
		return ", #ash = :ash, #adue = :adue REMOVE #attn, #attnat"
	}
	return " REMOVE #ash, #adue, #attn, #attnat"
}
