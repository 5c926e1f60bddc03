package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Admin is the part of the DynamoDB client that table set-up uses.
type Admin interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// TableReadyTimeout bounds the wait for a new table to become ACTIVE.
const TableReadyTimeout = 2 * time.Minute

// CreateTableInput is the table oncecall needs: one string partition key,
// on-demand capacity. template.yaml declares the same schema (a test checks).
func CreateTableInput(table string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(PartitionKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(PartitionKey), KeyType: types.KeyTypeHash}},
	}
}

// EnsureTable creates table if it does not exist, waits until it is active,
// and turns on TTL on TTLAttribute. It reports whether it created the table.
// A store that does not implement TTL (minidyn) is not an error: oncecall
// enforces expiry itself, and TTL only reclaims space.
func EnsureTable(ctx context.Context, api Admin, table string) (created bool, ttlErr error, err error) {
	_, err = api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil:
		return false, nil, nil
	case !errors.As(err, &nf):
		return false, nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	if _, err := api.CreateTable(ctx, CreateTableInput(table)); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return false, nil, fmt.Errorf("create table %s: %w", table, err)
		}
	}
	deadline := time.Now().Add(TableReadyTimeout)
	for {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "") {
			break
		}
		if time.Now().After(deadline) {
			return true, nil, fmt.Errorf("table %s not active after %s", table, TableReadyTimeout)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return true, nil, err
		}
	}
	_, ttlErr = api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true),
		},
	})
	return true, ttlErr, nil
}
