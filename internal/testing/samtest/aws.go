package samtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// Operations the AWS stand-in serves, as their X-Amz-Target.
const (
	GetSecretValue = "secretsmanager.GetSecretValue"
	DynamoPrefix   = "DynamoDB_20120810."
)

// storeTimeout bounds creating the table and writing the demo users.
const storeTimeout = time.Minute

// StartStore starts an embedded DynamoDB-compatible store of the test's
// own (for NewAWS to pass DynamoDB requests to), creates table in it as
// internal/dynamo does and writes the demo users through a dynamo.Store
// made with opts. The store stops when the test ends; the client is one
// for the tests' own reads and writes.
func StartStore(t testing.TB, table string, opts ...dynamo.Option) (*localdb.Server, *dynamodb.Client) {
	t.Helper()
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	client := dynamotest.NewClient(t, db.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if _, err := dynamo.EnsureTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	if _, err := localdb.SeedDemo(ctx, dynamo.New(client, table, opts...)); err != nil {
		t.Fatal(err)
	}
	return db, client
}

// AWSCall is one request a function sent towards AWS.
type AWSCall struct {
	// Target is the X-Amz-Target operation, or "proxy <host>" for a
	// request that tried to leave the machine.
	Target string
	Body   []byte
}

// AWS is where every request a function under test sends towards AWS ends
// up, and what records it. The SDK reaches it through AWS_ENDPOINT_URL;
// anything else that tries to leave the machine reaches it through
// HTTP_PROXY and HTTPS_PROXY and is refused. It answers Secrets Manager's
// GetSecretValue for the secrets it holds and passes DynamoDB requests
// unchanged to a DynamoDB-compatible store (the embedded one).
type AWS struct {
	srv   *httptest.Server
	store *httputil.ReverseProxy

	mu      sync.Mutex
	secrets map[string]string // ARN -> value
	calls   []AWSCall
	// created is the secrets' CreatedDate: when the stand-in started.
	created time.Time
}

// NewAWS starts the stand-in, passing DynamoDB requests to storeURL and
// holding secrets (ARN to value). It stops when the test ends.
func NewAWS(t testing.TB, storeURL string, secrets map[string]string) *AWS {
	t.Helper()
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	a := &AWS{store: httputil.NewSingleHostReverseProxy(u), secrets: secrets, created: time.Now()}
	// An unreachable store is a case the tests make on purpose: the 502
	// the function gets says so, the log line would only be noise.
	a.store.ErrorLog = log.New(io.Discard, "", 0)
	a.srv = httptest.NewServer(a)
	t.Cleanup(a.srv.Close)
	return a
}

// URL is the stand-in's endpoint.
func (a *AWS) URL() string { return a.srv.URL }

// Env is what points a function's SDK and any other traffic bound off the
// machine at the stand-in.
func (a *AWS) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL": a.srv.URL,
		"HTTP_PROXY":       a.srv.URL, "HTTPS_PROXY": a.srv.URL,
		"http_proxy": a.srv.URL, "https_proxy": a.srv.URL,
	}
}

// Calls returns the requests so far.
func (a *AWS) Calls() []AWSCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

func (a *AWS) record(c AWSCall) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, c)
}

func (a *AWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect || r.URL.IsAbs() {
		a.record(AWSCall{Target: "proxy " + r.Host})
		http.Error(w, "this test lets nothing leave the machine", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	a.record(AWSCall{Target: target, Body: body})
	switch {
	case target == GetSecretValue:
		var in struct {
			SecretID string `json:"SecretId"`
		}
		_ = json.Unmarshal(body, &in)
		a.mu.Lock()
		value, ok := a.secrets[in.SecretID]
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if !ok {
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"ResourceNotFoundException","Message":"Secrets Manager can't find the specified secret."}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"ARN": in.SecretID, "Name": "oncecall-secret", "SecretString": value,
			"VersionId": "00000000-0000-4000-8000-000000000001", "VersionStages": []string{"AWSCURRENT"},
			"CreatedDate": float64(a.created.UnixMilli()) / 1000,
		})
	case strings.HasPrefix(target, DynamoPrefix):
		r.Body = io.NopCloser(bytes.NewReader(body))
		a.store.ServeHTTP(w, r)
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnknownOperationException","Message":"not served in tests: %q"}`, target)
	}
}

// DynamoGrants is what a DynamoDB request needs in IAM terms: its actions
// (a transaction needs the action of each kind of item in it) on the
// resources it names, written as the template references them: tables
// maps a table's name to its reference (such as "getatt:Table.Arn"), and a
// Query of an index names the index's ARN.
func DynamoGrants(t testing.TB, c AWSCall, tables map[string]string) []Grant {
	t.Helper()
	op, ok := strings.CutPrefix(c.Target, DynamoPrefix)
	if !ok {
		t.Fatalf("%s is not a DynamoDB request", c.Target)
	}
	ref := func(table string) string {
		t.Helper()
		r, ok := tables[table]
		if !ok {
			t.Errorf("%s names table %q, which is not the stack's", op, table)
		}
		return r
	}
	var out []Grant
	type keyed struct {
		TableName string
		Key, Item map[string]struct{ S string }
		// What the request names and asks back.
		ExpressionAttributeNames                                                  map[string]string
		ConditionExpression, UpdateExpression, ProjectionExpression, ReturnValues string
	}
	// attrs is dynamodb:Attributes of a request: the top-level attributes
	// it names, in its key, its item, its expressions' names and any name
	// its expressions write out.
	attrs := func(k keyed) string {
		set := map[string]bool{}
		for n := range k.Key {
			set[n] = true
		}
		for n := range k.Item {
			set[n] = true
		}
		for _, n := range k.ExpressionAttributeNames {
			set[n] = true
		}
		for _, e := range []string{k.ConditionExpression, k.UpdateExpression, k.ProjectionExpression} {
			for _, n := range bareNames(e) {
				set[n] = true
			}
		}
		return strings.Join(slices.Sorted(maps.Keys(set)), ",")
	}
	pk := func(k keyed) string {
		if v, ok := k.Key["pk"]; ok {
			return v.S
		}
		return k.Item["pk"].S
	}
	switch op {
	case "TransactWriteItems", "TransactGetItems":
		var in struct {
			TransactItems []map[string]keyed
		}
		if err := json.Unmarshal(c.Body, &in); err != nil {
			t.Fatal(err)
		}
		for _, item := range in.TransactItems {
			for kind, a := range item {
				action := map[string]string{
					"ConditionCheck": "dynamodb:ConditionCheckItem", "Put": "dynamodb:PutItem",
					"Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem", "Get": "dynamodb:GetItem",
				}[kind]
				out = append(out, Grant{Action: action, Resource: ref(a.TableName), Key: pk(a), Attrs: attrs(a), Returns: a.ReturnValues})
			}
		}
	default:
		var in struct {
			keyed
			IndexName string
		}
		if err := json.Unmarshal(c.Body, &in); err != nil {
			t.Fatal(err)
		}
		res := ref(in.TableName)
		if in.IndexName != "" {
			res += "/index/" + in.IndexName
		}
		out = append(out, Grant{Action: "dynamodb:" + op, Resource: res, Key: pk(in.keyed), Attrs: attrs(in.keyed), Returns: in.ReturnValues})
	}
	return out
}

// expressionWords are the words of DynamoDB's expressions that are not
// attribute names.
var expressionWords = map[string]bool{
	"SET": true, "REMOVE": true, "ADD": true, "DELETE": true, "AND": true, "OR": true, "NOT": true,
	"BETWEEN": true, "IN": true, "if_not_exists": true, "list_append": true, "attribute_exists": true,
	"attribute_not_exists": true, "attribute_type": true, "begins_with": true, "contains": true, "size": true,
}

// bareNames returns the attribute names expression e writes out, not
// through a #name: the words that are neither a #name, a :value nor one
// of the expression's own.
func bareNames(e string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(e, func(r rune) bool {
		return !(r == '#' || r == ':' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		if f[0] == '#' || f[0] == ':' || f[0] >= '0' && f[0] <= '9' || expressionWords[f] {
			continue
		}
		out = append(out, f)
	}
	return out
}
