package callback_test

// Benchmarks of oncecall's own overhead: the handler path without BCrypt and
// without a store (decode, read the user record, validate, canonicalize,
// hash, build the store request, encode the answer). The
// BENCHMARK-ONLY types below stand in for the network so that only CPU work
// is measured; they are not used by any correctness test, which always talk
// to a real DynamoDB-compatible server.

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/ticket"
)

// benchAcceptAnyNonce is a BENCHMARK-ONLY Authenticator that does no BCrypt
// work: BCrypt's cost is measured on its own (nonce.BenchmarkVerifyCost9).
type benchAcceptAnyNonce struct{}

// benchNonce has a BCrypt hash's shape at cost 9, which the handler's
// checks before BCrypt accept; benchAcceptAnyNonce accepts it.
const benchNonce = "$2b$09$" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"

func (benchAcceptAnyNonce) Verify(string) error { return nil }
func (benchAcceptAnyNonce) MaxCost() int        { return 10 }

// benchNoNetworkAPI is a BENCHMARK-ONLY dynamo.API that answers at once:
// alice's record to the user read, and a successful write, or, when replay
// is set, the cancellation DynamoDB sends for a taken key with the old item.
// dynamo.Store still builds every request exactly as it would for DynamoDB.
type benchNoNetworkAPI struct {
	replay *types.TransactionCanceledException
}

func (a *benchNoNetworkAPI) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	// The claim and the ticket.
	if len(in.TransactItems) != 2 {
		panic("unexpected transaction")
	}
	if a.replay != nil {
		return nil, a.replay
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func (a *benchNoNetworkAPI) TransactGetItems(context.Context, *dynamodb.TransactGetItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	panic("TransactGetItems on a create_ticket path")
}

func (a *benchNoNetworkAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	k, _ := in.Key[dynamo.PartitionKey].(*types.AttributeValueMemberS)
	switch {
	case k != nil && k.Value == "config#ids" && aws.ToBool(in.ConsistentRead):
		return &dynamodb.GetItemOutput{Item: benchIDKey}, nil // once per Store
	case k == nil || k.Value != "user#user-a" || !aws.ToBool(in.ConsistentRead):
		panic("a GetItem other than the user's or the id key's consistent read")
	}
	return &dynamodb.GetItemOutput{Item: benchAlice}, nil
}

// benchAlice is alice's record as the store holds it; benchAliceWire the
// GetItem answer that carries it; benchIDKey and its wire form the id key's
// item.
var (
	benchAlice = map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "user#user-a"}, "kind": &types.AttributeValueMemberS{Value: "user"},
		"tenant_id": &types.AttributeValueMemberS{Value: "tenant-a"}, "name": &types.AttributeValueMemberS{Value: "alice"},
		"active":    &types.AttributeValueMemberBOOL{Value: true},
		"functions": &types.AttributeValueMemberSS{Value: localdb.DemoUsers[0].Functions},
	}
	benchIDKey = map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "config#ids"}, "key": &types.AttributeValueMemberB{Value: []byte("0123456789abcdef0123456789abcdef")},
	}
	benchIDKeyWire = []byte(`{"Item":{"pk":{"S":"config#ids"},"key":{"B":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}}}`)
	benchAliceWire = []byte(`{"Item":{"pk":{"S":"user#user-a"},"kind":{"S":"user"},"tenant_id":{"S":"tenant-a"},"name":{"S":"alice"},"active":{"BOOL":true},"functions":{"SS":["create_ticket","get_ticket"]}}}`)
)

func (a *benchNoNetworkAPI) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	panic("PutItem on a callback path")
}

func (a *benchNoNetworkAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	panic("UpdateItem on a callback path without a destination")
}

func (a *benchNoNetworkAPI) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	panic("Query on a callback path")
}

// benchCannedTransport is a BENCHMARK-ONLY http.RoundTripper that answers
// the user read with alice's record and every other request with a fixed
// DynamoDB response, so that the real SDK client serializes, signs and
// deserializes as it does over the network.
type benchCannedTransport struct {
	status int
	body   []byte
}

func (c *benchCannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var req []byte
	if r.Body != nil {
		req, _ = io.ReadAll(r.Body)
		_ = r.Body.Close()
	}
	status, body := c.status, c.body
	if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetItem") {
		status, body = http.StatusOK, benchAliceWire
		if bytes.Contains(req, []byte("config#ids")) {
			body = benchIDKeyWire
		}
	}
	return &http.Response{
		StatusCode: status, Status: strconv.Itoa(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"bench"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}

// benchBody is a realistic create_ticket callback.
var benchBody = []byte(`{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"Cannot sign in","description":"Since this morning the login page says my password is wrong.\nI reset it twice.","priority":"high","tags":["login","web"]}},"context":{"externalUserId":"user-a","callSource":"ChatCompletionsApi","conversationToken":"conv-3f1c","moment":"2026-11-30T12:00:00.1234+00:00","metadata":{"request_id":"req-7d2c9b1e"}}}`)

// benchHandler builds a handler over store with production-like logging
// (JSON lines, discarded).
func benchHandler(store callback.Store) *callback.Handler {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	return callback.NewHandler(benchAcceptAnyNonce{}, store, logger)
}

// replayOf returns the cancellation DynamoDB sends when the benchmark body's
// operation is already completed, with its old item, as the SDK decodes it
// and as JSON on the wire.
func replayOf(b *testing.B) (*types.TransactionCanceledException, []byte) {
	args := map[string]any{"title": "Cannot sign in", "description": "Since this morning the login page says my password is wrong.\nI reset it twice.",
		"priority": "high", "tags": []any{"login", "web"}}
	args, v := ticket.Create.Normalize(args)
	if len(v) > 0 {
		b.Fatal(v)
	}
	key, err := idempotency.Derive(idempotency.PolicyArguments, idempotency.Operation{Tenant: "tenant-a", RequestID: "req-7d2c9b1e", Function: ticket.CreateName, Arguments: args})
	if err != nil {
		b.Fatal(err)
	}
	id := "0f8e6c1a-3b2d-4c5e-9f70-1a2b3c4d5e6f"
	result := `{"status":"created","ticket_id":"` + id + `"}`
	item := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "op#" + key.ID}, "kind": &types.AttributeValueMemberS{Value: "operation"},
		"user_id": &types.AttributeValueMemberS{Value: "user-a"}, "tenant_id": &types.AttributeValueMemberS{Value: "tenant-a"},
		"function": &types.AttributeValueMemberS{Value: ticket.CreateName}, "state": &types.AttributeValueMemberS{Value: "completed"},
		"fingerprint": &types.AttributeValueMemberS{Value: key.Fingerprint}, "ticket_id": &types.AttributeValueMemberS{Value: id},
		"result": &types.AttributeValueMemberS{Value: result}, "created_at": &types.AttributeValueMemberN{Value: "1796040000"},
		"expires_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
	}
	tce := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: []types.CancellationReason{
		{Code: aws.String("ConditionalCheckFailed"), Item: item}, {Code: aws.String("None")}, {Code: aws.String("None")}}}
	var wire strings.Builder
	wire.WriteString(`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[{"Code":"ConditionalCheckFailed","Item":{`)
	first := true
	for k, v := range item {
		if !first {
			wire.WriteByte(',')
		}
		first = false
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			wire.WriteString(strconv.Quote(k) + `:{"S":` + strconv.Quote(x.Value) + `}`)
		case *types.AttributeValueMemberN:
			wire.WriteString(strconv.Quote(k) + `:{"N":` + strconv.Quote(x.Value) + `}`)
		}
	}
	wire.WriteString(`}},{"Code":"None"},{"Code":"None"}]}`)
	return tce, []byte(wire.String())
}

func runCalls(b *testing.B, h *callback.Handler, want string) {
	b.Helper()
	req := callback.Request{Nonce: benchNonce, Body: benchBody}
	ans := h.Call(context.Background(), req)
	if ans.Status != 200 || !bytes.Contains(ans.Body(), []byte(want)) {
		b.Fatalf("answer %d %s, want %s", ans.Status, ans.Body(), want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		h.Call(context.Background(), req)
	}
	// CPU time of the process (GC included) is reported beside wall time:
	// on a machine shared with other work it moves far less.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOverhead is the handler path of one create_ticket call with the
// store requests (the user read, the transaction) built but not sent:
// oncecall's code alone.
func BenchmarkOverhead(b *testing.B) {
	b.Run("created", func(b *testing.B) {
		runCalls(b, benchHandler(dynamo.New(&benchNoNetworkAPI{}, "oncecall")), `"deduplicated":false`)
	})
	b.Run("deduplicated", func(b *testing.B) {
		tce, _ := replayOf(b)
		runCalls(b, benchHandler(dynamo.New(&benchNoNetworkAPI{replay: tce}, "oncecall")), `"deduplicated":true`)
	})
}

// BenchmarkOverheadWithSDK adds what the AWS SDK does per call: serialize,
// sign and deserialize the request, over a transport that answers at once.
func BenchmarkOverheadWithSDK(b *testing.B) {
	client := func(status int, body []byte) *dynamodb.Client {
		cfg := dynamo.LocalConfig("us-east-1")
		cfg.HTTPClient = &http.Client{Transport: &benchCannedTransport{status: status, body: body}}
		return dynamodb.NewFromConfig(cfg, dynamo.Options("http://127.0.0.1:1"))
	}
	b.Run("created", func(b *testing.B) {
		runCalls(b, benchHandler(dynamo.New(client(200, []byte(`{}`)), "oncecall")), `"deduplicated":false`)
	})
	b.Run("deduplicated", func(b *testing.B) {
		_, wire := replayOf(b)
		runCalls(b, benchHandler(dynamo.New(client(400, wire), "oncecall")), `"deduplicated":true`)
	})
}
