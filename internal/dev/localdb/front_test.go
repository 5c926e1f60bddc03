package localdb_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestStartWithKeepsTopLevelRemove: a store started with a front still
// removes an attribute named in a top-level REMOVE, as StartWith promises,
// and the front sees the requests.
func TestStartWithKeepsTopLevelRemove(t *testing.T) {
	var seen atomic.Int64
	db, err := localdb.StartWith("127.0.0.1:0", func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1); next.ServeHTTP(w, r) })
	})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, db)
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, dynamo.CreateTableInput("t")); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": s("k")}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("k"), "x": s("v")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("REMOVE x")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Item["x"]; ok {
		t.Fatalf("behind a front, a top-level REMOVE left the attribute: %v", out.Item)
	}
	if n := seen.Load(); n < 4 {
		t.Fatalf("the front saw %d requests, want at least 4", n)
	}
}
