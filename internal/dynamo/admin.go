package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
)

// AdminAPI is the part of the DynamoDB client that Admin uses: the Store's
// calls and the batch reads of administration, which the deployed
// functions never make (so their role does not allow them).
// *dynamodb.Client implements it.
type AdminAPI interface {
	API
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Limits of administration reads.
const (
	// DefaultPageSize is how many index entries one Query asks for.
	DefaultPageSize = 100
	// MaxBatchGet is how many keys one BatchGetItem may carry (DynamoDB's
	// limit).
	MaxBatchGet = 100
	// MaxListUsers bounds the users one Admin.Users call returns.
	MaxListUsers = 1000
	// MaxRequestMatches bounds the tickets Admin.FindRequest reads for one
	// tenant and request id; a request id makes one ticket per distinct set
	// of arguments, so more than a few means a misbehaving client.
	MaxRequestMatches = 100
)

// Admin is the operator's side of the store, for oncecall-admin: a
// tenant's users, one-field user changes conditional on the record the
// operator read, and an operation found by its ticket, its key or its
// tenant and request id. It is safe for concurrent use.
type Admin struct {
	store    *Store
	api      AdminAPI
	table    string
	pageSize int32
	prover   Prover
}

// Prover makes the proof an audit entry carries (auditkms.Key): what only
// the decision role can make over the decision on the ticket.
type Prover interface {
	Prove(ctx context.Context, ticketID string, d delivery.Decision) ([]byte, error)
}

// WithProver makes every audit entry the Admin writes carry p's proof,
// made before anything is written: a proof that cannot be made leaves
// nothing decided. Without it entries carry none.
func WithProver(p Prover) AdminOption {
	return func(a *Admin) { a.prover = p }
}

// prove is the proof of decision d on ticket id, nil without a Prover.
func (a *Admin) prove(ctx context.Context, id string, d delivery.Decision) ([]byte, error) {
	if a.prover == nil {
		return nil, nil
	}
	p, err := a.prover.Prove(ctx, id, d)
	if err != nil {
		return nil, fmt.Errorf("dynamo: nothing decided: the audit entry's proof could not be made: %w", err)
	}
	return p, nil
}

// AdminOption configures an Admin.
type AdminOption func(*Admin)

// WithPageSize sets how many index entries one Query asks for (default
// DefaultPageSize). Tests make it small to cross page boundaries.
func WithPageSize(n int32) AdminOption {
	return func(a *Admin) {
		if n > 0 {
			a.pageSize = n
		}
	}
}

// NewAdmin returns an Admin on table.
func NewAdmin(api AdminAPI, table string, opts ...AdminOption) *Admin {
	a := &Admin{store: New(api, table), api: api, table: table, pageSize: DefaultPageSize}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Table returns the table name, for messages that say where a change went.
func (a *Admin) Table() string { return a.table }

// queryKeys returns the partition keys (pk) of the LookupIndex entries
// under lk whose sort key is after after ("" for all), in index order, at
// most max of them, and whether more follow.
func (a *Admin) queryKeys(ctx context.Context, lk, after string, maxKeys int) ([]string, bool, error) {
	cond := "#lk = :lk"
	names := map[string]string{"#lk": attrLookup}
	values := map[string]types.AttributeValue{":lk": strAV(lk)}
	if after != "" {
		cond += " AND #sort > :after"
		names["#sort"] = attrLookupSort
		values[":after"] = strAV(after)
	}
	var keys []string
	var start map[string]types.AttributeValue
	for {
		limit := min(int(a.pageSize), maxKeys+1-len(keys))
		in := &dynamodb.QueryInput{
			TableName:                 &a.table,
			IndexName:                 aws.String(LookupIndex),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(int32(limit)), // #nosec G115 -- at most MaxListUsers+1
		}
		var out *dynamodb.QueryOutput
		err := a.store.retry(ctx, func() (err error) {
			out, err = a.api.Query(ctx, in)
			return err
		})
		if err != nil {
			return nil, false, err
		}
		for _, item := range out.Items {
			k, ok := item[PartitionKey].(*types.AttributeValueMemberS)
			if !ok {
				return nil, false, fmt.Errorf("dynamo: %s entry without %s", LookupIndex, PartitionKey)
			}
			keys = append(keys, k.Value)
		}
		if len(keys) > maxKeys {
			return keys[:maxKeys], true, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, false, nil
		}
		start = out.LastEvaluatedKey
	}
}

// batchGet reads the items under keys (values of pk) with strongly
// consistent reads and returns them by key; absent items are missing from
// the map.
func (a *Admin) batchGet(ctx context.Context, keys []string) (map[string]map[string]types.AttributeValue, error) {
	found := make(map[string]map[string]types.AttributeValue, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), MaxBatchGet)
		chunk := make([]map[string]types.AttributeValue, n)
		for i, k := range keys[:n] {
			chunk[i] = pk(k)
		}
		keys = keys[n:]
		var b budget
		for len(chunk) > 0 {
			in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				a.table: {Keys: chunk, ConsistentRead: aws.Bool(true)},
			}}
			var out *dynamodb.BatchGetItemOutput
			err := a.store.retry(ctx, func() (err error) {
				out, err = a.api.BatchGetItem(ctx, in)
				return err
			})
			if err != nil {
				return nil, err
			}
			for _, item := range out.Responses[a.table] {
				if k, ok := item[PartitionKey].(*types.AttributeValueMemberS); ok {
					found[k.Value] = item
				}
			}
			chunk = out.UnprocessedKeys[a.table].Keys
			if len(chunk) > 0 {
				// DynamoDB hands back keys it had no capacity for: that is
				// throttling, with the same budget as any other.
				if err := a.store.backoff(ctx, &b, &types.ProvisionedThroughputExceededException{}); err != nil {
					return nil, err
				}
			}
		}
	}
	return found, nil
}
