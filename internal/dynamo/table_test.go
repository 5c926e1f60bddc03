package dynamo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// indexNames returns the names of table's global secondary indexes, sorted.
func indexNames(t *testing.T, client *dynamodb.Client, table string) []string {
	t.Helper()
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		names = append(names, aws.ToString(g.IndexName))
	}
	slices.Sort(names)
	return names
}

func TestEnsureTableCreatesIndexes(t *testing.T) {
	ep, _ := dynamotest.Endpoint(t)
	client := dynamotest.NewClient(t, ep, nil)
	table := "ensure-create-" + time.Now().Format("150405.000000000")
	ctx := context.Background()
	t.Cleanup(func() { _, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })

	res, err := dynamo.EnsureTable(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || len(res.IndexesAdded) != 0 {
		t.Errorf("first EnsureTable = %+v, want created with its indexes", res)
	}
	if res.TTL != dynamo.TTLEnabled {
		t.Errorf("TTL = %s (%v), want enabled", res.TTL, res.TTLError)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil || ttl.TimeToLiveDescription == nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expires_at" ||
		ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("DescribeTimeToLive = %+v, %v; want expires_at enabled", ttl, err)
	}
	if got := indexNames(t, client, table); !slices.Equal(got, []string{dynamo.LegacyAttentionIndex, dynamo.AttentionIndex, dynamo.LookupIndex}) {
		t.Errorf("indexes %v", got)
	}
	again, err := dynamo.EnsureTable(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || len(again.IndexesAdded) != 0 || again.TTL != dynamo.TTLUntouched {
		t.Errorf("second EnsureTable = %+v, want nothing done", again)
	}
}

// TestEnsureTableAddsMissingIndexes upgrades a table created before the
// indexes existed, as a deployed table of an earlier version is.
func TestEnsureTableAddsMissingIndexes(t *testing.T) {
	ep, _ := dynamotest.Endpoint(t)
	client := dynamotest.NewClient(t, ep, nil)
	table := "ensure-upgrade-" + time.Now().Format("150405.000000000")
	ctx := context.Background()
	t.Cleanup(func() { _, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })

	old := dynamo.CreateTableInput(table)
	old.GlobalSecondaryIndexes = nil
	old.AttributeDefinitions = old.AttributeDefinitions[:1]
	if _, err := client.CreateTable(ctx, old); err != nil {
		t.Fatal(err)
	}
	res, err := dynamo.EnsureTable(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || !slices.Equal(res.IndexesAdded, []string{dynamo.LookupIndex, dynamo.LegacyAttentionIndex, dynamo.AttentionIndex}) || res.TTL != dynamo.TTLUntouched {
		t.Errorf("EnsureTable on the old table = %+v, want every index added", res)
	}
	if got := indexNames(t, client, table); !slices.Equal(got, []string{dynamo.LegacyAttentionIndex, dynamo.AttentionIndex, dynamo.LookupIndex}) {
		t.Errorf("indexes %v", got)
	}
	again, err := dynamo.EnsureTable(ctx, client, table)
	if err != nil || len(again.IndexesAdded) != 0 {
		t.Errorf("second EnsureTable = %+v, %v", again, err)
	}
}

// TestEnsureTableRefusesAnotherIndexShape: an index of the same name with
// other keys is reported, never replaced.
func TestEnsureTableRefusesAnotherIndexShape(t *testing.T) {
	ep, _ := dynamotest.Endpoint(t)
	client := dynamotest.NewClient(t, ep, nil)
	table := "ensure-other-" + time.Now().Format("150405.000000000")
	ctx := context.Background()
	t.Cleanup(func() { _, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })

	in := dynamo.CreateTableInput(table)
	in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
		IndexName:  aws.String(dynamo.LookupIndex),
		KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("lk"), KeyType: types.KeyTypeHash}},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}}
	// DynamoDB refuses attribute definitions that no key uses.
	in.AttributeDefinitions = []types.AttributeDefinition{
		{AttributeName: aws.String(dynamo.PartitionKey), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String("lk"), AttributeType: types.ScalarAttributeTypeS},
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	_, err := dynamo.EnsureTable(ctx, client, table)
	if err == nil || !strings.Contains(err.Error(), "index lookup exists with key schema") {
		t.Fatalf("an index of another shape: %v", err)
	}
}

// TestEnsureTableAddsTheShardedIndex upgrades a table as the versions
// before the sharded attention index made it (lookup, and attention keyed
// by state alone): EnsureTable adds AttentionIndex and leaves the other two
// as they are.
func TestEnsureTableAddsTheShardedIndex(t *testing.T) {
	ep, _ := dynamotest.Endpoint(t)
	client := dynamotest.NewClient(t, ep, nil)
	table := "ensure-shards-" + time.Now().Format("150405.000000000")
	ctx := context.Background()
	t.Cleanup(func() { _, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })

	old := dynamo.CreateTableInput(table)
	old.GlobalSecondaryIndexes = slices.DeleteFunc(old.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndex) bool {
		return aws.ToString(g.IndexName) == dynamo.AttentionIndex
	})
	old.AttributeDefinitions = slices.DeleteFunc(old.AttributeDefinitions, func(a types.AttributeDefinition) bool {
		return strings.HasPrefix(aws.ToString(a.AttributeName), "attn_") && aws.ToString(a.AttributeName) != "attn_at"
	})
	if _, err := client.CreateTable(ctx, old); err != nil {
		t.Fatal(err)
	}
	res, err := dynamo.EnsureTable(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || !slices.Equal(res.IndexesAdded, []string{dynamo.AttentionIndex}) {
		t.Errorf("EnsureTable on a table of the version before = %+v, want %s added", res, dynamo.AttentionIndex)
	}
	if got := indexNames(t, client, table); !slices.Equal(got, []string{dynamo.LegacyAttentionIndex, dynamo.AttentionIndex, dynamo.LookupIndex}) {
		t.Errorf("indexes %v", got)
	}
}
