package dynamo

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// grantCopyPrefix starts the partition key of the copies of a user's grant
// that earlier versions kept beside its record (grant#<user>#<n>). No call
// reads them any more; RemoveGrantCopies deletes them.
const grantCopyPrefix = "grant#"

// copyRemovers is how many copies RemoveGrantCopies deletes at once.
const copyRemovers = 16

// RemoveGrantCopies deletes every copy of a grant that an earlier version
// wrote beside the users' records (oncecall-admin table
// remove-grant-copies), one DeleteItem each, copyRemovers at once, and
// returns how many it deleted. It reads the table with a scan, keys only;
// a table without copies is read and left as it is. Running it again
// after an interruption deletes what is left.
func (a *Admin) RemoveGrantCopies(ctx context.Context) (int, error) {
	n := 0
	var start map[string]types.AttributeValue
	for {
		var out *dynamodb.ScanOutput
		err := a.store.retry(ctx, func() (err error) {
			out, err = a.api.Scan(ctx, &dynamodb.ScanInput{
				TableName: &a.table, ExclusiveStartKey: start,
				ProjectionExpression:      aws.String("#pk"),
				FilterExpression:          aws.String("begins_with(#pk, :copy)"),
				ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey},
				ExpressionAttributeValues: map[string]types.AttributeValue{":copy": strAV(grantCopyPrefix)},
			})
			return err
		})
		if err != nil {
			return n, err
		}
		deleted, err := a.deleteAll(ctx, out.Items)
		n += deleted
		if err != nil {
			return n, err
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return n, nil
		}
	}
}

// deleteAll deletes the items whose keys are given, copyRemovers at once,
// and returns how many it deleted before the first failure.
func (a *Admin) deleteAll(ctx context.Context, keys []map[string]types.AttributeValue) (int, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	n := 0
	sem := make(chan struct{}, copyRemovers)
	for _, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := a.store.retry(ctx, func() error {
				_, err := a.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &a.table, Key: map[string]types.AttributeValue{PartitionKey: k[PartitionKey]}})
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				n++
			}
		})
	}
	wg.Wait()
	return n, errors.Join(errs...)
}
