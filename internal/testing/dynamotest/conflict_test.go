package dynamotest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestConflictRule: while a transaction holds its items, another
// transaction that includes one of them is cancelled with
// TransactionConflict at that item's position and None elsewhere (even when
// both only check the item), a plain write of it is refused with
// TransactionConflictException, a TransactGetItems of it is cancelled, and
// a plain read goes through; once the hold ends all of them succeed. The
// first transaction holds its items until the checks are done (Release),
// however long they take.
func TestConflictRule(t *testing.T) {
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	rule := &dynamotest.Conflicts{Release: gate}
	proxy.Conflicts = rule
	c := dynamotest.NewClient(t, proxy.URL, nil)
	ctx := context.Background()
	table := aws.String(env.Table)
	if _, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("user#u")}}); err != nil {
		t.Fatal(err)
	}
	check := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: table,
			Key: map[string]types.AttributeValue{"pk": s(pk)}, ConditionExpression: aws.String("attribute_exists(pk)")}}
	}
	put := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: table, Item: map[string]types.AttributeValue{"pk": s(pk)}}}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer release()
	var firstErr error
	wg.Go(func() {
		_, firstErr = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{check("user#u"), put("op#1")}})
	})
	for deadline := time.Now().Add(30 * time.Second); rule.Holding() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first transaction holds %d items after 30s, want 2", rule.Holding())
		}
	}

	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("op#2"), check("user#u")}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 ||
		aws.ToString(tce.CancellationReasons[0].Code) != "None" || aws.ToString(tce.CancellationReasons[1].Code) != "TransactionConflict" {
		t.Errorf("a second transaction checking the held item: %v", err)
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("user#u"), "x": s("1")}})
	var tc *types.TransactionConflictException
	if !errors.As(err, &tc) {
		t.Errorf("a plain write of the held item: %v", err)
	}
	_, err = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: table, Key: map[string]types.AttributeValue{"pk": s("user#u")}}}}})
	if !errors.As(err, &tce) {
		t.Errorf("a TransactGetItems of the held item: %v", err)
	}
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("user#u")}}); err != nil {
		t.Errorf("a plain read of the held item: %v", err)
	}
	release()
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("the first transaction: %v", firstErr)
	}
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("op#2"), check("user#u")}}); err != nil {
		t.Errorf("after the hold: %v", err)
	}
	if _, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("op#1")}, ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if st := rule.Stats(); st.Cancelled != 2 || st.Refused != 1 {
		t.Errorf("stats %+v, want 2 cancelled, 1 refused", st)
	}
}

// TestLostAnswers: with LoseRate 1 every applied write answers 500 though
// it applied; reads answer as usual.
func TestLostAnswers(t *testing.T) {
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	proxy.Conflicts = &dynamotest.Conflicts{LoseRate: 1}
	c := dynamotest.NewClient(t, proxy.URL, nil)
	ctx := context.Background()
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: map[string]types.AttributeValue{"pk": s("k")}})
	if err == nil {
		t.Fatal("the answer of an applied write was not lost")
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.Table), Key: map[string]types.AttributeValue{"pk": s("k")}, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("the write did not apply, or the read lost its answer: %v, %v", out, err)
	}
	if st := proxy.Conflicts.Stats(); st.Lost != 1 {
		t.Errorf("stats %+v", st)
	}
}
