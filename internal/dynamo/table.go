package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableAPI is the part of the DynamoDB client that table set-up uses.
// *dynamodb.Client implements it.
type TableAPI interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Waits of table set-up.
const (
	// TableReadyTimeout bounds the wait for a new table to become ACTIVE.
	TableReadyTimeout = 2 * time.Minute
	// IndexReadyTimeout bounds the wait for an index added to an existing
	// table to become ACTIVE. DynamoDB backfills the index from every item
	// first, which on a large table can take longer: EnsureTable then
	// returns an error saying so, and the index keeps building.
	IndexReadyTimeout = 30 * time.Minute
	// setupPoll is the interval between DescribeTable calls while waiting.
	setupPoll = time.Second
)

// The table's global secondary indexes (see CreateTableInput).
const (
	// LookupIndex finds a ticket by tenant and request id, and a tenant's
	// users, without a scan. Projection KEYS_ONLY: a query answers keys, the
	// items are read by key.
	LookupIndex = "lookup"
	// AttentionIndex lists the tickets whose delivery needs the sweep or a
	// person. It is sparse: only such tickets carry its key. Its partition
	// key is the state and one of AttentionShards shards ("queued#07"),
	// its sort key the time the entry is due (queued: the next attempt;
	// uncertain, failed: when the delivery entered the state) and the
	// ticket id, so that the sweep reads only the due entries, as a key
	// range, and no state's writes meet on one partition.
	AttentionIndex = "attention_by_shard"
	// LegacyAttentionIndex is the attention index of earlier versions: one
	// partition per state (attn), sorted by when the delivery entered it
	// (attn_at). Nothing lists a ticket there any more; every write that
	// changes a ticket's delivery removes its entry, and the sweep moves
	// the entries left (Store.Relist), so it empties. It stays in the
	// table's definition so that a stack deployed before upgrades in one
	// deploy (CloudFormation adds or deletes one index per update, never
	// both); it costs nothing empty.
	LegacyAttentionIndex = "attention"

	attrLookup            = "lk"
	attrLookupSort        = "lk_sort"
	attrAttention         = "attn_shard"
	attrAttentionDue      = "attn_due"
	attrLegacyAttention   = "attn"
	attrLegacyAttentionAt = "attn_at"
)

// attentionProjection is what AttentionIndex carries besides the keys: the
// tenant and the delivery attributes the sweep and the listing filter and
// show (design: "Ticket item delivery attributes").
var attentionProjection = []string{attrTenant, attrNextAt, attrDelivery, attrSince}

// legacyAttentionProjection is what LegacyAttentionIndex carries.
var legacyAttentionProjection = []string{attrTenant, attrNextAt, attrDelivery}

// CreateTableInput is the table oncecall needs: one string partition key,
// on-demand capacity, and the global secondary indexes LookupIndex,
// AttentionIndex and LegacyAttentionIndex. template.yaml declares the same schema (a test checks).
func CreateTableInput(table string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(PartitionKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLookup), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLookupSort), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLegacyAttention), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLegacyAttentionAt), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrAttention), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrAttentionDue), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema:              []types.KeySchemaElement{{AttributeName: aws.String(PartitionKey), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: indexes(),
	}
}

func indexes() []types.GlobalSecondaryIndex {
	return []types.GlobalSecondaryIndex{
		{
			IndexName: aws.String(LookupIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrLookup), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrLookupSort), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		},
		{
			IndexName: aws.String(LegacyAttentionIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrLegacyAttention), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrLegacyAttentionAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: slices.Clone(legacyAttentionProjection)},
		},
		{
			IndexName: aws.String(AttentionIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrAttention), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrAttentionDue), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: slices.Clone(attentionProjection)},
		},
	}
}

// TTLState says what EnsureTable did about time to live.
type TTLState string

// TTL states.
const (
	// TTLEnabled: the table was created and TTL turned on for TTLAttribute.
	TTLEnabled TTLState = "enabled"
	// TTLNotEnabled: the table was created but the store refused to turn
	// TTL on (a store that lacks it; on AWS, a missing permission).
	// Nothing depends on it: oncecall enforces expiry itself, TTL only
	// reclaims space.
	TTLNotEnabled TTLState = "not_enabled"
	// TTLUntouched: the table existed; EnsureTable leaves its TTL alone.
	TTLUntouched TTLState = "untouched"
)

// TableSetup is what EnsureTable did.
type TableSetup struct {
	// Created is true when the table did not exist and EnsureTable created
	// it, with its indexes.
	Created bool
	// IndexesAdded names the indexes EnsureTable added to a table that
	// existed without them, in the order added.
	IndexesAdded []string
	// TTL says whether time to live was turned on.
	TTL TTLState
	// TTLError is the store's answer when TTL is TTLNotEnabled.
	TTLError error
}

// EnsureTable creates table if it does not exist, with its indexes, waits
// until it is active and turns on TTL on TTLAttribute. On a table that
// exists it adds the indexes it lacks (one UpdateTable each, as DynamoDB
// requires) and waits until each is active. An index that exists with
// another key schema or projection is an error: it is not replaced.
func EnsureTable(ctx context.Context, api TableAPI, table string) (TableSetup, error) {
	desc, err := describe(ctx, api, table)
	if err != nil {
		return TableSetup{}, err
	}
	if desc == nil {
		return create(ctx, api, table)
	}
	return addIndexes(ctx, api, table, desc)
}

// describe returns the table's description, nil when it does not exist.
func describe(ctx context.Context, api TableAPI, table string) (*types.TableDescription, error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe table %s: %w", table, sanitize(err))
	case out.Table == nil:
		return nil, fmt.Errorf("describe table %s: no description", table)
	}
	return out.Table, nil
}

func create(ctx context.Context, api TableAPI, table string) (TableSetup, error) {
	res := TableSetup{Created: true, TTL: TTLNotEnabled}
	if _, err := api.CreateTable(ctx, CreateTableInput(table)); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return TableSetup{}, fmt.Errorf("create table %s: %w", table, sanitize(err))
		}
		// Created meanwhile by someone else: wait for it like our own.
	}
	if _, err := waitActive(ctx, api, table, ""); err != nil {
		return res, err
	}
	_, res.TTLError = api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true),
		},
	})
	if res.TTLError == nil {
		res.TTL = TTLEnabled
	}
	return res, nil
}

func addIndexes(ctx context.Context, api TableAPI, table string, desc *types.TableDescription) (TableSetup, error) {
	res := TableSetup{TTL: TTLUntouched}
	defs := CreateTableInput(table).AttributeDefinitions
	for _, want := range indexes() {
		name := aws.ToString(want.IndexName)
		have := findIndex(desc, name)
		if have != nil {
			if err := sameIndex(want, *have); err != nil {
				return res, fmt.Errorf("table %s: index %s exists %w; it is not replaced: delete it or use another table", table, name, err)
			}
			if have.IndexStatus == types.IndexStatusActive || have.IndexStatus == "" {
				continue
			}
			// Being built (by an earlier run): wait for it below.
		} else {
			_, err := api.UpdateTable(ctx, &dynamodb.UpdateTableInput{
				TableName:            aws.String(table),
				AttributeDefinitions: defs,
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName: want.IndexName, KeySchema: want.KeySchema, Projection: want.Projection,
				}}},
			})
			var inUse *types.ResourceInUseException
			if err != nil && !errors.As(err, &inUse) {
				return res, fmt.Errorf("table %s: add index %s: %w", table, name, sanitize(err))
			}
			if err == nil {
				res.IndexesAdded = append(res.IndexesAdded, name)
			}
		}
		d, err := waitActive(ctx, api, table, name)
		if err != nil {
			return res, err
		}
		desc = d
	}
	return res, nil
}

// waitActive waits until table, and index when not empty, are ACTIVE and
// returns the last description: at most TableReadyTimeout for a table,
// IndexReadyTimeout for an index. A store that reports no status (some
// emulators leave TableStatus empty) counts as active.
func waitActive(ctx context.Context, api TableAPI, table, index string) (*types.TableDescription, error) {
	timeout := TableReadyTimeout
	what := "table " + table
	if index != "" {
		timeout = IndexReadyTimeout
		what = "index " + index + " of table " + table
	}
	deadline := time.Now().Add(timeout)
	for {
		d, err := describe(ctx, api, table)
		if err == nil && d != nil && active(d, index) {
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not active after %s; DynamoDB keeps building it: run again later to confirm", what, timeout)
		}
		if err := Sleep(ctx, setupPoll); err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", what, err)
		}
	}
}

func active(d *types.TableDescription, index string) bool {
	if d.TableStatus != types.TableStatusActive && d.TableStatus != "" {
		return false
	}
	if index == "" {
		return true
	}
	gsi := findIndex(d, index)
	return gsi != nil && (gsi.IndexStatus == types.IndexStatusActive || gsi.IndexStatus == "")
}

func findIndex(d *types.TableDescription, name string) *types.GlobalSecondaryIndexDescription {
	for i := range d.GlobalSecondaryIndexes {
		if aws.ToString(d.GlobalSecondaryIndexes[i].IndexName) == name {
			return &d.GlobalSecondaryIndexes[i]
		}
	}
	return nil
}

// sameIndex reports how have differs from want in key schema or projection.
func sameIndex(want types.GlobalSecondaryIndex, have types.GlobalSecondaryIndexDescription) error {
	keys := func(ks []types.KeySchemaElement) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = aws.ToString(k.AttributeName) + ":" + string(k.KeyType)
		}
		return out
	}
	if w, h := keys(want.KeySchema), keys(have.KeySchema); !slices.Equal(w, h) {
		return fmt.Errorf("with key schema %v, not %v", h, w)
	}
	if have.Projection == nil {
		return nil // the store does not describe projections
	}
	wp, hp := want.Projection, have.Projection
	wa, ha := slices.Sorted(slices.Values(wp.NonKeyAttributes)), slices.Sorted(slices.Values(hp.NonKeyAttributes))
	if wp.ProjectionType != hp.ProjectionType || !slices.Equal(wa, ha) {
		return fmt.Errorf("with projection %s %v, not %s %v", hp.ProjectionType, ha, wp.ProjectionType, wa)
	}
	return nil
}

// EnableStream turns on table's stream with the view type viewType (as
// template.yaml declares it for a stack that delivers) when it is off, and
// returns the stream's ARN. A stream that is on with another view type is
// an error: changing it means a new stream.
func EnableStream(ctx context.Context, api TableAPI, table, viewType string) (string, error) {
	desc, err := describe(ctx, api, table)
	if err != nil {
		return "", err
	}
	if desc == nil {
		return "", fmt.Errorf("dynamo: table %s does not exist", table)
	}
	if spec := desc.StreamSpecification; spec != nil && aws.ToBool(spec.StreamEnabled) {
		if string(spec.StreamViewType) != viewType {
			return "", fmt.Errorf("dynamo: table %s streams %s, want %s", table, spec.StreamViewType, viewType)
		}
		return aws.ToString(desc.LatestStreamArn), nil
	}
	if _, err := api.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(viewType)}}); err != nil {
		return "", fmt.Errorf("dynamo: enable the stream of %s: %w", table, err)
	}
	desc, err = waitActive(ctx, api, table, "")
	if err != nil {
		return "", err
	}
	if arn := aws.ToString(desc.LatestStreamArn); arn != "" {
		return arn, nil
	}
	return "", fmt.Errorf("dynamo: table %s reports no stream after enabling it", table)
}
