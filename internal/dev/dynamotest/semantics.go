package dynamotest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/oncecall/oncecall/internal/dynamo"
)

// Semantics says how the store under test answers where DynamoDB-compatible
// stores are known to answer differently from DynamoDB (README.md, "Tests",
// lists them). A test whose
// expectation depends on one of these asks Probe instead of assuming the
// embedded store, so that the same suite holds against DynamoDB Local.
type Semantics struct {
	// OldItemOnFailedPut: a transactional Put whose condition failed comes
	// back with the item it found when it asked for it
	// (ReturnValuesOnConditionCheckFailure=ALL_OLD). minidyn omits it, and
	// oncecall then reads the item with a consistent GetItem.
	OldItemOnFailedPut bool
	// EveryFailedReason: a cancelled transaction reports every action whose
	// condition failed. minidyn reports the first one only.
	EveryFailedReason bool
	// ClientRequestToken: a TransactWriteItems sent again with its token
	// (within DynamoDB's ten minutes) succeeds again without writing.
	// minidyn ignores the token and runs the transaction again.
	ClientRequestToken bool
	// ContainsOnMissingItem: a condition calling contains() on the
	// attribute of an item that does not exist fails as a condition.
	// minidyn refuses the whole request as invalid.
	ContainsOnMissingItem bool
	// TimeToLive: UpdateTimeToLive is implemented. (DynamoDB Local accepts
	// it and never deletes anything; minidyn answers it with an error.)
	TimeToLive bool
}

// DynamoDB is how DynamoDB, and DynamoDB Local, answer.
var DynamoDB = Semantics{OldItemOnFailedPut: true, EveryFailedReason: true, ClientRequestToken: true, ContainsOnMissingItem: true, TimeToLive: true}

// Minidyn is how the embedded store (github.com/truora/minidyn) answers.
var Minidyn = Semantics{}

// String names the fields that are true.
func (s Semantics) String() string {
	var on []string
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"OldItemOnFailedPut", s.OldItemOnFailedPut}, {"EveryFailedReason", s.EveryFailedReason},
		{"ClientRequestToken", s.ClientRequestToken}, {"ContainsOnMissingItem", s.ContainsOnMissingItem},
		{"TimeToLive", s.TimeToLive},
	} {
		if f.on {
			on = append(on, f.name)
		}
	}
	return "{" + strings.Join(on, " ") + "}"
}

var (
	probeOnce sync.Once
	probed    Semantics
	probeErr  error
)

// Probe returns the Semantics of the store the tests run against, measured
// once per test binary on a table of its own, deleted afterwards.
func Probe(t testing.TB) Semantics {
	t.Helper()
	endpoint, _ := Endpoint(t)
	probeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		probed, probeErr = probe(ctx, NewClient(t, endpoint, nil), "oncecall-probe-"+randomHex(6))
	})
	if probeErr != nil {
		t.Fatalf("probe the store at %s: %v", endpoint, probeErr)
	}
	return probed
}

func probe(ctx context.Context, c *dynamodb.Client, table string) (Semantics, error) {
	var s Semantics
	setup, err := dynamo.EnsureTable(ctx, c, table)
	if err != nil {
		return s, err
	}
	defer func() {
		_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	s.TimeToLive = setup.TTL == dynamo.TTLEnabled

	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: pk}}
	}
	item := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: pk}, "kind": &types.AttributeValueMemberS{Value: "probe"}}
	}
	absent := func(pk string, old types.ReturnValuesOnConditionCheckFailure) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(table), Item: item(pk),
			ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames:            map[string]string{"#pk": dynamo.PartitionKey},
			ReturnValuesOnConditionCheckFailure: old,
		}}
	}
	for _, pk := range []string{"probe#a", "probe#b"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(pk)}); err != nil {
			return s, err
		}
	}

	// Two Puts over existing items, the first asking for the old item.
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		absent("probe#a", types.ReturnValuesOnConditionCheckFailureAllOld), absent("probe#b", ""),
	}})
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		return s, errors.New("two Puts over existing items succeeded")
	case !errors.As(err, &tce) || len(tce.CancellationReasons) != 2:
		return s, fmt.Errorf("two failing Puts: want a cancellation with two reasons, got %w", err)
	}
	r := tce.CancellationReasons
	s.OldItemOnFailedPut = len(r[0].Item) > 0
	s.EveryFailedReason = aws.ToString(r[0].Code) == "ConditionalCheckFailed" && aws.ToString(r[1].Code) == "ConditionalCheckFailed"

	// One transaction, sent twice with its token.
	token := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("probe-" + randomHex(8)),
		TransactItems: []types.TransactWriteItem{absent("probe#c", "")}}
	if _, err := c.TransactWriteItems(ctx, token); err != nil {
		return s, fmt.Errorf("a new Put: %w", err)
	}
	_, err = c.TransactWriteItems(ctx, token)
	switch {
	case err == nil:
		s.ClientRequestToken = true
	case !errors.As(err, &tce):
		return s, fmt.Errorf("the same transaction again: %w", err)
	}

	// A user check, as oncecall's, of a user that does not exist.
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{
		ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(table), Key: key("probe#missing"),
			ConditionExpression:       aws.String("#active = :true AND contains(#functions, :function)"),
			ExpressionAttributeNames:  map[string]string{"#active": "active", "#functions": "functions"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}, ":function": &types.AttributeValueMemberS{Value: "f"}},
		},
	}}})
	var ae smithy.APIError
	switch {
	case err == nil:
		return s, errors.New("a check of a missing item passed")
	case errors.As(err, &tce):
		s.ContainsOnMissingItem = true
	case errors.As(err, &ae) && ae.ErrorCode() == "ValidationException":
	default:
		return s, fmt.Errorf("a check of a missing item: want a cancellation or a validation error, got %w", err)
	}
	return s, nil
}
