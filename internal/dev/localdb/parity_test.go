package localdb_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// client is a client of db that closes its connections, and db, when the
// test ends.
func client(t *testing.T, db *localdb.Server) *dynamodb.Client {
	t.Helper()
	hc := dynamo.HTTPClient()
	cfg := dynamo.LocalConfig("")
	cfg.HTTPClient = hc
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		_ = db.Close()
	})
	return dynamodb.NewFromConfig(cfg, dynamo.Options(db.URL))
}

// store starts an embedded store with one table that has a sparse index on
// "attn", and returns a client for it.
func store(t *testing.T) *dynamodb.Client {
	t.Helper()
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, db)
	_, err = c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:   aws.String("t"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("attn"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("attention"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("attn"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func listed(t *testing.T, c *dynamodb.Client) int {
	t.Helper()
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String("t"), IndexName: aws.String("attention"),
		KeyConditionExpression:    aws.String("attn = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": s("x")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

func item(t *testing.T, c *dynamodb.Client, pk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s(pk)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestTopLevelRemoveRemoves checks that an update's REMOVE takes the
// attribute away and the item out of the sparse index, in UpdateItem and
// in TransactWriteItems, beside a SET in the same expression, as on DynamoDB.
func TestTopLevelRemoveRemoves(t *testing.T) {
	c := store(t)
	ctx := context.Background()
	for _, pk := range []string{"a", "b"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
			"pk": s(pk), "attn": s("x"), "keep": s("k"), "nested": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"in": s("v")}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := listed(t, c); n != 2 {
		t.Fatalf("%d items listed, want 2", n)
	}
	out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("a")},
		UpdateExpression:          aws.String("SET #k = :v REMOVE #attn"),
		ConditionExpression:       aws.String("#attn = :x"),
		ExpressionAttributeNames:  map[string]string{"#k": "keep", "#attn": "attn"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("set"), ":x": s("x")},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Attributes["attn"]; ok {
		t.Error("ALL_NEW still shows the removed attribute")
	}
	a := item(t, c, "a")
	if _, ok := a["attn"]; ok || a["keep"].(*types.AttributeValueMemberS).Value != "set" || a["nested"] == nil {
		t.Fatalf("after SET and REMOVE: %v", a)
	}
	if n := listed(t, c); n != 1 {
		t.Fatalf("%d items listed after one left the index, want 1", n)
	}
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Update: &types.Update{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("b")},
		UpdateExpression: aws.String("REMOVE attn"),
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	b := item(t, c, "b")
	if _, ok := b["attn"]; ok || b["keep"] == nil {
		t.Fatalf("after a transactional REMOVE: %v", b)
	}
	if n := listed(t, c); n != 0 {
		t.Fatalf("%d items listed, want 0", n)
	}
	// A failed condition removes nothing.
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("c"), "attn": s("x")}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("c")},
		UpdateExpression: aws.String("REMOVE attn"), ConditionExpression: aws.String("attribute_not_exists(attn)"),
	})
	if err == nil {
		t.Fatal("the condition did not fail")
	}
	if _, ok := item(t, c, "c")["attn"]; !ok {
		t.Fatal("a failed update removed the attribute")
	}
}

// TestUpdateWithoutRemoveIsUntouched checks that an update with no REMOVE
// clause answers as minidyn does, its ALL_NEW attributes whole.
func TestUpdateWithoutRemoveIsUntouched(t *testing.T) {
	c := store(t)
	out, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("n")},
		UpdateExpression: aws.String("SET attn = :x, #o = :x"), ExpressionAttributeNames: map[string]string{"#o": "more"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("x")},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attributes["attn"] == nil || out.Attributes["more"] == nil || listed(t, c) != 1 {
		t.Fatalf("ALL_NEW %v, listed %d", out.Attributes, listed(t, c))
	}
}

// TestUpdatesThatEnterTheIndexAreAllListed: items written without an index
// key and given one by UpdateItem are all found by a query of the index, as
// on DynamoDB. (minidyn alone overwrites the index's first entry with each
// one, and a query then misses items.)
func TestUpdatesThatEnterTheIndexAreAllListed(t *testing.T) {
	c := store(t)
	ctx := context.Background()
	const n = 6
	for i := range n {
		pk := s(string(rune('a' + i)))
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": pk, "v": s("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s(string(rune('a' + i)))},
			UpdateExpression: aws.String("SET attn = :x"), ConditionExpression: aws.String("v = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("x"), ":v": s("x")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := listed(t, c); got != i+1 {
			t.Fatalf("after %d items entered the index a query finds %d", i+1, got)
		}
	}
}
