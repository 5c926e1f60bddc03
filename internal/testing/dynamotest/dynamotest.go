// Package dynamotest gives tests a real DynamoDB client over HTTP and a
// fresh table.
//
// By default each test binary starts one dynoxide store (internal/local/localdb)
// on a loopback port. With DYNAMODB_ENDPOINT set (and AWS_REGION and
// credentials as the endpoint needs), the same tests run against that
// endpoint instead. Either way every test creates its own uniquely named
// table, so tests never share state, and the tests expect DynamoDB's
// answers: a store that departs from them fails them.
package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
)

// EnvEndpoint names the variable that points the tests at another store.
const EnvEndpoint = "DYNAMODB_ENDPOINT"

// Env is one test's store.
type Env struct {
	// Client is a real SDK client configured like oncecall's own (no SDK
	// retries) that counts its requests in Requests.
	Client   *dynamodb.Client
	Requests *dynamo.Counter
	Table    string
	Endpoint string
	// Local is the store this test binary started, or nil when
	// DYNAMODB_ENDPOINT is set.
	Local *localdb.Server
}

var (
	once   sync.Once
	shared *localdb.Server
	err0   error
)

// External reports whether tests run against DYNAMODB_ENDPOINT.
func External() bool { return os.Getenv(EnvEndpoint) != "" }

// Endpoint returns the store endpoint tests use, starting the embedded one on
// first use.
func Endpoint(t testing.TB) (string, *localdb.Server) {
	t.Helper()
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return ep, nil
	}
	once.Do(func() { shared, err0 = localdb.Start("127.0.0.1:0") })
	if err0 != nil {
		t.Fatalf("start the local store: %v", err0)
	}
	return shared.URL, shared
}

// Main wraps a test binary's m so that, after its tests, the embedded store
// they shared is stopped. Use it under a leak check:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }
func Main(m interface{ Run() int }) interface{ Run() int } { return stopping{m} }

type stopping struct{ m interface{ Run() int } }

func (s stopping) Run() int {
	code := s.m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil && code == 0 {
			code = 1
		}
	}
	return code
}

// New returns a client and a newly created table for one test.
func New(t testing.TB) *Env {
	t.Helper()
	ep, local := Endpoint(t)
	e := &Env{Requests: &dynamo.Counter{}, Endpoint: ep, Local: local, Table: "oncecall-test-" + RandomHex(6)}
	e.Client = NewClient(t, ep, e.Requests)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := dynamo.EnsureTable(ctx, e.Client, e.Table); err != nil {
		t.Fatalf("create table %s at %s: %v", e.Table, ep, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(e.Table)})
	})
	e.Requests.Reset()
	return e
}

// CheckAskedCapacity fails t if any request counted in Requests since the
// test began was of an operation that takes ReturnConsumedCapacity and its
// body did not ask for INDEXES. Every client NewClient makes is checked so
// when its test ends.
func (e *Env) CheckAskedCapacity(t testing.TB) {
	t.Helper()
	checkAsked(t, e.Requests)
}

func checkAsked(t testing.TB, c *dynamo.Counter) {
	t.Helper()
	if c == nil {
		return
	}
	if un := c.Unasked(); len(un) > 0 {
		t.Errorf("requests sent without \"ReturnConsumedCapacity\":\"INDEXES\", per operation: %v", un)
	}
}

// NewClient returns an SDK client for endpoint, counting into counter (its
// own when nil). Against the embedded store it uses static local
// credentials; against another endpoint, the default AWS credential chain.
// When the test ends it fails the test if the client sent any request that
// did not ask for its consumed capacity (see CheckAskedCapacity).
func NewClient(t testing.TB, endpoint string, counter *dynamo.Counter) *dynamodb.Client {
	t.Helper()
	if counter == nil {
		counter = &dynamo.Counter{}
	}
	t.Cleanup(func() { checkAsked(t, counter) })
	return dynamodb.NewFromConfig(Config(t), dynamo.Options(endpoint), counter.Count())
}

// Config is the AWS configuration of the store under test, for any client
// of it (DynamoDB, DynamoDB Streams): static local credentials against the
// local store; the default AWS credential chain against DYNAMODB_ENDPOINT.
// Its HTTP client's connections are closed when the test ends, so that a
// leak check after the tests sees no connection goroutines of finished
// tests.
func Config(t testing.TB) aws.Config {
	t.Helper()
	cfg := dynamo.LocalConfig(os.Getenv("AWS_REGION"))
	if External() {
		var err error
		cfg, err = awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithHTTPClient(dynamo.BuildableHTTPClient()))
		if err != nil {
			t.Fatalf("AWS config: %v", err)
		}
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
	}
	hc := dynamo.HTTPClient()
	cfg.HTTPClient = hc
	t.Cleanup(hc.CloseIdleConnections)
	return cfg
}

// RandomHex is n random bytes in hex: a name no other run uses (tables,
// request ids).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Items returns every item of the table whose "kind" attribute is kind,
// reading the whole table with consistent scans. Tests count effects with it
// rather than trusting answers.
func (e *Env) Items(t testing.TB, kind string) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		res, err := e.Client.Scan(context.Background(), &dynamodb.ScanInput{
			TableName:                 aws.String(e.Table),
			ConsistentRead:            aws.Bool(true),
			FilterExpression:          aws.String("#kind = :kind"),
			ExpressionAttributeNames:  map[string]string{"#kind": "kind"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":kind": &types.AttributeValueMemberS{Value: kind}},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			t.Fatalf("scan %s: %v", e.Table, err)
		}
		out = append(out, res.Items...)
		if len(res.LastEvaluatedKey) == 0 {
			return out
		}
		start = res.LastEvaluatedKey
	}
}

// Count returns len(Items(t, kind)).
func (e *Env) Count(t testing.TB, kind string) int {
	t.Helper()
	return len(e.Items(t, kind))
}

// DeleteItem deletes the item with partition key pk, as an administrator
// would behind oncecall's back.
func (e *Env) DeleteItem(t testing.TB, pk string) {
	t.Helper()
	_, err := e.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(e.Table),
		Key:       map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		t.Fatalf("delete %s: %v", pk, err)
	}
}

// CopyItem puts a copy of the item with partition key from under partition
// key to, as an administrator would behind oncecall's back (no transaction,
// so no ClientRequestToken of oncecall's is spent on it).
func (e *Env) CopyItem(t testing.TB, from, to string) {
	t.Helper()
	ctx := context.Background()
	out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: from}},
	})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("read %s: %v (found %v)", from, err, len(out.Item) > 0)
	}
	out.Item[dynamo.PartitionKey] = &types.AttributeValueMemberS{Value: to}
	if _, err := e.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.Table), Item: out.Item}); err != nil {
		t.Fatalf("put %s: %v", to, err)
	}
}
