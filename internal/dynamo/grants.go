package dynamo

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/identity"
)

// GrantShards is how many copies of a user's grant (tenant, active,
// functions) the table holds beside the user's record. Every create checks
// one copy inside its transaction, chosen by the operation key, and every
// get_ticket reads one, chosen by the ticket id. On DynamoDB a
// transaction holds every item it includes, a ConditionCheck's too, and
// cancels any other transaction that includes one of them: were every call
// of a user to check the user's one record, one user's concurrent calls
// (a service account behind many agent sessions) would cancel each other.
// Spread over GrantShards copies, two calls of one user meet on the same
// item once in GrantShards times, a create that meets another tries the
// next copy at once (maxHops times), and a plain write of one copy (an
// operator's change) waits out one call at most. 256: the contention part
// of make bench keeps one user's creates/s within 0.9 of 256 users' up to
// 256 concurrent callers; 16 copies gave 0.35 to 0.78. A change writes
// every copy, grantWriters at once: 257 writes.
const GrantShards = 256

// grantWriters is how many copies of a grant a change writes at once.
const grantWriters = 16

// maxHops bounds how many other copies a create tries, at once, when
// another call holds the one it checked; then it waits and tries again.
const maxHops = 4

// grantPrefix starts the partition key of a grant copy.
const grantPrefix = "grant#"

// attrGrantStamp orders the writes of one user's grant: the writer's clock
// in nanoseconds. A copy is only ever replaced by a later write.
const attrGrantStamp = "gstamp"

func grantKey(userID string, shard int) map[string]types.AttributeValue {
	return pk(grantPrefix + userID + "#" + strconv.Itoa(shard))
}

// shardOf picks the grant copy a call checks: the FNV-1a hash of what the
// call is about (its operation key, or the ticket it reads).
func shardOf(s string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32() % GrantShards)
}

// shardToken is the ClientRequestToken of a create sent again on another
// copy of the grant (its hops-th): a token names one request's content,
// and DynamoDB refuses a token sent with other content. 32 hex characters
// (a token is at most 36).
func shardToken(ticketID string, hops int) string {
	sum := sha256.Sum256([]byte(ticketID + "#" + strconv.Itoa(hops)))
	return hex.EncodeToString(sum[:16])
}

func grantItem(u identity.User, shard int, stamp int64) map[string]types.AttributeValue {
	item := newItem(grantPrefix+u.ExternalID+"#"+strconv.Itoa(shard), 8)
	item[attrKind] = strAV("grant")
	item[attrUserID] = strAV(u.ExternalID)
	item[attrTenant] = strAV(u.Tenant)
	item[attrName] = strAV(u.Name)
	item[attrActive] = &types.AttributeValueMemberBOOL{Value: u.Active}
	item[attrFunctions] = &types.AttributeValueMemberSS{Value: u.Functions}
	item[attrGrantStamp] = numAV(stamp)
	return item
}

// writeGrants writes u's grant to every copy, one plain write each, each
// unless a later write stamped it meanwhile. A copy that a call's
// transaction holds at that moment refuses the write
// (TransactionConflictException); it is tried again, with backoff, until
// it goes through: it waits out one call at most. A change applies to
// every call that starts after writeGrants returns; a call running
// meanwhile sees the old grant or the new.
func (s *Store) writeGrants(ctx context.Context, u identity.User) error {
	stamp := s.now().UnixNano()
	if wall := time.Now().UnixNano(); wall > stamp {
		stamp = wall // a store clock set in the past (tests) still orders writes
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, grantWriters)
	for shard := range GrantShards {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := s.retry(ctx, func() error {
				_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
					TableName:                 &s.table,
					Item:                      grantItem(u, shard, stamp),
					ConditionExpression:       aws.String("attribute_not_exists(#gs) OR #gs < :gs"),
					ExpressionAttributeNames:  map[string]string{"#gs": attrGrantStamp},
					ExpressionAttributeValues: map[string]types.AttributeValue{":gs": numAV(stamp)},
				})
				return err
			})
			var ccf *types.ConditionalCheckFailedException
			if err != nil && !errors.As(err, &ccf) {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// SyncGrants gives every user of the table the copies of its grant, from
// its record: a table written before the copies existed gets them once
// (oncecall-admin user sync-grants), and a copy that differs from its
// record is rewritten. Until then a call of a user without copies checks
// the user's record itself, as before. It returns how many users it
// synced; it reads the table with a scan.
func (a *Admin) SyncGrants(ctx context.Context) (int, error) {
	n := 0
	var start map[string]types.AttributeValue
	for {
		var out *dynamodb.ScanOutput
		err := a.store.retry(ctx, func() (err error) {
			out, err = a.api.Scan(ctx, &dynamodb.ScanInput{
				TableName: &a.table, ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
				FilterExpression:          aws.String("#kind = :user"),
				ExpressionAttributeNames:  map[string]string{"#kind": attrKind},
				ExpressionAttributeValues: map[string]types.AttributeValue{":user": strAV("user")},
			})
			return err
		})
		if err != nil {
			return n, err
		}
		for _, item := range out.Items {
			id := strings.TrimPrefix((&decoder{item: item}).str(PartitionKey, true), userPrefix)
			u, err := decodeUser(item, id)
			if err != nil {
				return n, err
			}
			if err := a.store.writeGrants(ctx, u); err != nil {
				return n, err
			}
			n++
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return n, nil
		}
	}
}

// DeleteUser deletes the record of a user and every copy of its grant: no
// call that starts afterwards is authorized. (Deleting only the record by
// hand leaves the copies, which keep authorizing calls: disable a user, or
// delete it with this.) A user that does not exist is no error.
func (a *Admin) DeleteUser(ctx context.Context, userID string) error {
	keys := []map[string]types.AttributeValue{userKey(userID)}
	for shard := range GrantShards {
		keys = append(keys, grantKey(userID, shard))
	}
	for _, k := range keys {
		if err := a.store.retry(ctx, func() error {
			_, err := a.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &a.table, Key: k})
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
