package dynamotest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// TestTokenRule: a ClientRequestToken sent again with the same parameters
// goes through; with other parameters it is refused with
// IdempotentParameterMismatch and nothing applies, even when its first use
// was cancelled; another token goes through.
func TestTokenRule(t *testing.T) {
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	rule := &dynamotest.Tokens{}
	proxy.Tokens = rule
	c := dynamotest.NewClient(t, proxy.URL, nil)
	ctx := context.Background()
	table := aws.String(env.Table)
	put := func(token, pk string) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token), TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: table, Item: map[string]types.AttributeValue{"pk": s(pk)},
				ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": "pk"}}},
		}})
		return err
	}
	mismatch := func(err error) bool {
		var ae smithy.APIError
		return errors.As(err, &ae) && ae.ErrorCode() == "IdempotentParameterMismatchException"
	}
	if err := put("token-1", "op#1"); err != nil {
		t.Fatal(err)
	}
	if err := put("token-1", "op#1"); err != nil {
		t.Errorf("the same token with the same parameters: %v", err)
	}
	if err := put("token-1", "op#2"); !mismatch(err) {
		t.Errorf("the same token with other parameters: %v, want IdempotentParameterMismatch", err)
	}
	// A first use that the store cancelled (the item exists) spends the
	// token all the same.
	var tce *types.TransactionCanceledException
	if err := put("token-2", "op#1"); !errors.As(err, &tce) {
		t.Fatalf("a claim of an existing item: %v, want a cancellation", err)
	}
	if err := put("token-2", "op#3"); !mismatch(err) {
		t.Errorf("a token whose first use was cancelled, with other parameters: %v, want IdempotentParameterMismatch", err)
	}
	out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("op#2")}, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) != 0 {
		t.Errorf("a refused request wrote op#2: %v %v", out.Item, err)
	}
	if err := put("token-3", "op#3"); err != nil {
		t.Errorf("another token: %v", err)
	}
	if n := rule.Mismatches(); n != 2 {
		t.Errorf("%d refusals counted, want 2", n)
	}
}
