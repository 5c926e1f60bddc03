package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/mapping"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/stream"
	"github.com/oncecall/oncecall/internal/testing/doctest"
	"github.com/oncecall/oncecall/internal/testing/samtest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// These tests check the delivery part of template.yaml against the code
// (internal/testing/samtest evaluates the template; functions/callback checks
// the callback's part).

const (
	templatePath       = "../../template.yaml"
	webhookURL         = "https://helpdesk.example.com/tickets"
	existingDestSecret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:helpdesk-AbCdEf"
	topic              = "arn:aws:sns:eu-west-1:123456789012:ops"
)

// webhook is the smallest set of parameters that deploys a destination.
var webhook = map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func deploy(t testing.TB, overrides map[string]string) *samtest.Stack {
	t.Helper()
	return samtest.Deploy(t, templatePath, overrides)
}

// TestTemplateDeliverConcurrencyIsCapped: the worker's concurrency is
// reserved by default (DeliverReservedConcurrency, 5), so that a burst of
// tickets takes a bounded share of the account and of the helpdesk; -1
// reserves none.
func TestTemplateDeliverConcurrencyIsCapped(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  *int
	}{{"", aws.Int(5)}, {"8", aws.Int(8)}, {"-1", nil}} {
		params := webhook
		if tc.value != "" {
			params = with(webhook, "DeliverReservedConcurrency", tc.value)
		}
		fn, err := deploy(t, params).Typed.GetServerlessFunctionWithName("DeliverFunction")
		if err != nil {
			t.Fatal(err)
		}
		if got := fn.ReservedConcurrentExecutions; (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("DeliverReservedConcurrency=%q: ReservedConcurrentExecutions %v, want %v", tc.value, aws.ToInt(got), aws.ToInt(tc.want))
		}
	}
}

// TestTemplateSaysHowSecretsAreRead: every secret a function reads is
// read again every secret.RefreshInterval, and the template's comments
// must not say otherwise.
func TestTemplateSaysHowSecretsAreRead(t *testing.T) {
	if src := string(readFile(t, templatePath)); strings.Contains(src, "once per cold start") {
		t.Error(`template.yaml says a secret is read "once per cold start"; the hook key and the destination's credentials are read again every secret.RefreshInterval`)
	}
}

// workerCalls are the store calls the worker makes: dynamo.Store's Lease,
// Finish and Defer (UpdateItem), the read after a refused lease that came
// without the item (GetItem), Due and Pending (Query of the attention
// index) and Relist (Query of the earlier attention index, UpdateItem).
var workerCalls = []samtest.StoreCall{{Method: "UpdateItem"}, {Method: "GetItem"}, {Method: "Query", Index: dynamo.AttentionIndex}, {Method: "Query", Index: dynamo.LegacyAttentionIndex}}

// withoutDestination are the resources and outputs of the stack as it was
// before delivery existed.
var (
	// The hook key's policy, the table's trail (TableDataEvents, on by
	// default) and the audit key are the callback's stack's too.
	callbackResources = []string{"Api5xxAlarm", "ApiAccessLogGroup", "AuditKey", "BusyRateAlarm", "CallbackFunction", "CallbackLogGroup", "CallbackRole", "Dashboard",
		"HookKeySecret", "HookKeySecretPolicy", "HttpApi", "OutcomeFunction", "OutcomeLogGroup", "OutcomeRole", "Table", "TableTrail", "TableTrailBucket", "TableTrailBucketPolicy"}
	callbackOutputs   = []string{"ApiAccessLogGroupName", "AuditKeyArn", "CallbackUrl", "DashboardName", "FunctionName", "FunctionSourceUrl", "HookKeySecretArn", "LogGroupName", "McpUrl", "OutcomeFunctionName", "OutcomeLogGroupName", "OutcomeRouteArn", "OutcomeUrl", "TableName", "TableTrailBucketName"}
	deliveryResources = []string{
		"DeliverFunction", "DeliverLogGroup", "DeliverRole", "DeliveryFailureQueue", "DestinationSecret",
		"DeliveryUncertainAlarm", "OldestQueuedAlarm", "DeliveryFailureQueueAlarm", "DeliveryAuthFailedAlarm", "DeliverIteratorAgeAlarm",
	}
	deliveryOutputs = []string{"DeliverFunctionName", "DeliverLogGroupName", "DeliveryFailureQueueUrl", "DestinationSecretArn", "TableStreamArn"}
	// deliveryEnv are every variable of internal/config/delivery.go.
	deliveryEnv = []string{
		config.EnvDestination, config.EnvDestinationURL, config.EnvZendeskSubdomain, config.EnvDestinationToken,
		config.EnvDestinationSecret, config.EnvDedupWindow, config.EnvLookup, config.EnvSettleDelay,
		config.EnvRequestHorizon, config.EnvDestinationTimeout, config.EnvMaxAttempts, config.EnvMaxAge, config.EnvInlineTimeout,
		config.EnvSweepInterval, config.EnvZendeskTenantField, config.EnvZendeskUserField, config.EnvZendeskRequester,
	}
)

func names(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTemplateWithoutADestination: the default stack is the callback
// (and the application's outcome read) alone, as before delivery existed, and a destination adds the
// delivery resources and nothing else.
func TestTemplateWithoutADestination(t *testing.T) {
	s := deploy(t, nil)
	if got := names(s.Eval["Resources"].(map[string]any)); !slices.Equal(got, callbackResources) {
		t.Errorf("resources without a destination\n%v\nwant\n%v", got, callbackResources)
	}
	if got := names(s.Eval["Outputs"].(map[string]any)); !slices.Equal(got, callbackOutputs) {
		t.Errorf("outputs without a destination %v, want %v", got, callbackOutputs)
	}
	env := s.Env("CallbackFunction")
	for _, k := range deliveryEnv {
		if _, ok := env[k]; ok {
			t.Errorf("CallbackFunction has %s without a destination", k)
		}
	}
	role, err := s.Typed.GetIAMRoleWithName("CallbackRole")
	if err != nil {
		t.Fatal(err)
	}
	var policies []string
	for _, p := range role.Policies {
		policies = append(policies, p.PolicyName)
	}
	if !slices.Equal(policies, []string{"logs", "table", "hook-key"}) {
		t.Errorf("CallbackRole's policies %v", policies)
	}
	if tb := s.Properties("Table"); tb["StreamSpecification"] != nil {
		t.Errorf("a stream without a destination: %v", tb["StreamSpecification"])
	}
	body := dashboard(t, s)
	for _, w := range []string{"Deliver", "delivery", "AWS/SQS", "IteratorAge", "runbook"} {
		if strings.Contains(body, w) {
			t.Errorf("the dashboard mentions %q without a destination", w)
		}
	}
	if err := json.Unmarshal([]byte(body), new(map[string]any)); err != nil {
		t.Errorf("the dashboard is not JSON: %v", err)
	}

	for _, o := range []map[string]string{webhook, {"Destination": "zendesk", "ZendeskSubdomain": "acme"}} {
		s := deploy(t, o)
		want := slices.Sorted(slices.Values(append(slices.Clone(callbackResources), deliveryResources...)))
		if got := names(s.Eval["Resources"].(map[string]any)); !slices.Equal(got, want) {
			t.Errorf("%v: resources\n%v\nwant\n%v", o, got, want)
		}
		want = slices.Sorted(slices.Values(append(slices.Clone(callbackOutputs), deliveryOutputs...)))
		if got := names(s.Eval["Outputs"].(map[string]any)); !slices.Equal(got, want) {
			t.Errorf("%v: outputs %v, want %v", o, got, want)
		}
	}
	// An existing secret: the stack creates none.
	s = deploy(t, with(webhook, "DestinationSecretArn", existingDestSecret))
	if s.Resource("DestinationSecret") != nil {
		t.Error("DestinationSecret created beside DestinationSecretArn")
	}
}

// lambdaEnv is what config.Load reads on Lambda for fn: its variables with
// the references CloudFormation fills in.
func lambdaEnv(t testing.TB, s *samtest.Stack, fn string) func(string) string {
	t.Helper()
	refs := map[string]string{
		"ref:Table": "oncecall-Table-ABC", "ref:DestinationSecret": existingDestSecret,
		"ref:HookKeySecret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hook-AbCdEf",
	}
	env := map[string]string{}
	for k, v := range s.Env(fn) {
		env[k] = samtest.Resolve(t, v, refs)
	}
	return func(k string) string { return env[k] }
}

func loadWorker(t testing.TB, s *samtest.Stack) (config.Config, error) {
	t.Helper()
	return config.Load(lambdaEnv(t, s, "DeliverFunction"), config.Worker, app.FunctionNames())
}

// maxLease is the longest lease an attempt can hold with a
// DestinationTimeout the template accepts.
func maxLease(t *testing.T) time.Duration {
	t.Helper()
	p := samtest.Read(t, templatePath)["Parameters"].(map[string]any)["DestinationTimeout"].(map[string]any)
	var longest time.Duration
	for _, v := range durationCandidates() {
		if samtest.CheckParameter(p, v) != nil {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DestinationTimeout accepts %q, which is not a duration", v)
		}
		longest = max(longest, d)
	}
	if longest == 0 {
		t.Fatal("DestinationTimeout accepts no duration")
	}
	return delivery.Policy{Timeout: longest}.LeaseFor()
}

func TestTemplateDeliverFunction(t *testing.T) {
	s := deploy(t, with(webhook, "LogRetentionDays", "14", "LogLevel", "DEBUG"))
	fn, err := s.Typed.GetServerlessFunctionWithName("DeliverFunction")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Runtime == nil || *fn.Runtime != "provided.al2023" || !slices.Equal(fn.Architectures, []string{"arm64"}) ||
		fn.Handler == nil || *fn.Handler != "bootstrap" {
		t.Errorf("runtime %v %v %v, want provided.al2023 arm64 bootstrap", fn.Runtime, fn.Architectures, fn.Handler)
	}
	if fn.CodeUri == nil || fn.CodeUri.String == nil || *fn.CodeUri.String != "." || fn.AWSCloudFormationMetadata["BuildMethod"] != "makefile" {
		t.Errorf("CodeUri %v, BuildMethod %v: `sam build` must run make build-DeliverFunction from the root module", fn.CodeUri, fn.AWSCloudFormationMetadata["BuildMethod"])
	}
	if fn.Role == nil || *fn.Role != "getatt:DeliverRole.Arn" {
		t.Errorf("Role = %v, want its own DeliverRole", fn.Role)
	}
	// Sized for HTTP calls, not the callback's BCrypt.
	if fn.MemorySize == nil || *fn.MemorySize < 128 || *fn.MemorySize >= 1769 {
		t.Errorf("MemorySize = %d", aws.ToInt(fn.MemorySize))
	}
	// A sweep or a batch needs whole leases before the deadline: at least
	// two at the longest DestinationTimeout the template accepts.
	lease := maxLease(t)
	if fn.Timeout == nil || time.Duration(*fn.Timeout)*time.Second < 2*lease || *fn.Timeout > 900 {
		t.Errorf("Timeout = %d s; want at least 2 leases of %s, and Lambda's 900 s at most", aws.ToInt(fn.Timeout), lease)
	}
	// Its reserved concurrency: TestTemplateDeliverConcurrencyIsCapped.
	lc := s.Logging["DeliverFunction"]
	if lc.LogFormat == nil || *lc.LogFormat != "JSON" || lc.LogGroup == nil || *lc.LogGroup != "ref:DeliverLogGroup" ||
		lc.ApplicationLogLevel == nil || *lc.ApplicationLogLevel != "DEBUG" {
		t.Errorf("LoggingConfig %+v: JSON, the LogLevel parameter, into DeliverLogGroup", lc)
	}
	lg, err := s.Typed.GetLogsLogGroupWithName("DeliverLogGroup")
	if err != nil || lg.RetentionInDays == nil || *lg.RetentionInDays != 14 {
		t.Errorf("DeliverLogGroup retention %v (%v), want LogRetentionDays", lg, err)
	}
	eic := fn.EventInvokeConfig
	if eic == nil || eic.MaximumRetryAttempts == nil || *eic.MaximumRetryAttempts != 0 {
		t.Errorf("EventInvokeConfig %+v: a failed sweep is not retried (the next comes a minute later)", eic)
	}
	evs := s.Properties("DeliverFunction")["Events"].(map[string]any)
	if got := names(evs); !slices.Equal(got, []string{"Stream", "Sweep"}) {
		t.Errorf("events %v, want the stream and the sweep", got)
	}
	sweep := evs["Sweep"].(map[string]any)
	sp := sweep["Properties"].(map[string]any)
	if sweep["Type"] != "Schedule" || sp["Schedule"] != "rate(1 minute)" || sp["Enabled"] != true || sp["Input"] != nil {
		t.Errorf("Sweep = %v, want an enabled Schedule rate(1 minute) sending EventBridge's own scheduled event", sweep)
	}

	// Its environment is the configuration the worker loads.
	c, err := loadWorker(t, s)
	if err != nil {
		t.Fatalf("the deployed worker does not start: %v", err)
	}
	if c.Delivery.Destination != config.DestinationWebhook || c.Delivery.URL != webhookURL || c.Delivery.SecretARN != existingDestSecret ||
		!c.Metrics || c.Table != "oncecall-Table-ABC" {
		t.Errorf("loaded %+v", c)
	}
	if p := app.Policy(c.Delivery); p != delivery.DefaultPolicy {
		t.Errorf("the parameters' defaults give the policy %+v, want the code's %+v", p, delivery.DefaultPolicy)
	}
	env := s.Env("DeliverFunction")
	// Declared empty for `sam local invoke --env-vars`.
	for _, k := range []string{config.EnvDestinationToken, config.EnvEndpoint} {
		if v, ok := env[k]; !ok || v != "" {
			t.Errorf("%s = %q, %v; want declared and empty", k, v, ok)
		}
	}
	for _, k := range []string{config.EnvZendeskSubdomain, config.EnvZendeskTenantField, config.EnvInlineTimeout, config.EnvSweepInterval, config.EnvHookKeySecret} {
		if _, ok := env[k]; ok {
			t.Errorf("the webhook worker has %s", k)
		}
	}

	s = deploy(t, map[string]string{
		"Destination": "zendesk", "ZendeskSubdomain": "acme", "DestinationSettleDelay": "2m", "DestinationTimeout": "20s",
		"DestinationMaxAttempts": "12", "DestinationMaxAge": "72h", "ZendeskTenantField": "360001", "ZendeskRequesterId": "7",
	})
	c, err = loadWorker(t, s)
	if err != nil {
		t.Fatalf("the deployed zendesk worker does not start: %v", err)
	}
	want := config.Delivery{
		Destination: config.DestinationZendesk, URL: "https://acme.zendesk.com", SecretARN: existingDestSecret,
		SettleDelay: 2 * time.Minute, Timeout: 20 * time.Second, MaxAttempts: 12, MaxAge: 72 * time.Hour,
		ZendeskTenantField: 360001, ZendeskRequesterID: 7,
	}
	if c.Delivery != want {
		t.Errorf("zendesk: loaded\n%+v\nwant\n%+v", c.Delivery, want)
	}
	if _, err := app.Destination(config.Delivery{Destination: c.Delivery.Destination, URL: c.Delivery.URL, Timeout: c.Delivery.Timeout, Token: "agent@acme.test/token:abc"}); err != nil {
		t.Errorf("the zendesk adapter refuses the deployed settings: %v", err)
	}
}

// streamEvent is DeliverFunction's DynamoDB event as deployed.
type streamEvent struct {
	Stream                         string
	StartingPosition               string
	BatchSize                      int
	ParallelizationFactor          int
	MaximumBatchingWindowInSeconds *int
	FilterCriteria                 struct{ Filters []struct{ Pattern string } }
	FunctionResponseTypes          []string
	BisectBatchOnFunctionError     bool
	MaximumRetryAttempts           *int
	MaximumRecordAgeInSeconds      *int
	DestinationConfig              struct {
		OnFailure struct{ Type, Destination string }
	}
}

func streamEventOf(t *testing.T, s *samtest.Stack) streamEvent {
	t.Helper()
	ev := s.Properties("DeliverFunction")["Events"].(map[string]any)["Stream"].(map[string]any)
	if ev["Type"] != "DynamoDB" {
		t.Fatalf("Stream event type %v", ev["Type"])
	}
	b, _ := json.Marshal(ev["Properties"])
	var se streamEvent
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&se); err != nil {
		t.Fatalf("the stream event has a property this test does not check: %v", err)
	}
	return se
}

func TestTemplateStreamEventSource(t *testing.T) {
	se := streamEventOf(t, deploy(t, webhook))
	if se.Stream != "getatt:Table.StreamArn" || se.StartingPosition != "TRIM_HORIZON" {
		t.Errorf("stream %q from %q, want the table's stream from TRIM_HORIZON", se.Stream, se.StartingPosition)
	}
	// One batch is delivered at once, every record in its own goroutine.
	if se.BatchSize < 1 || se.BatchSize > stream.MaxConcurrent {
		t.Errorf("BatchSize %d; internal/stream delivers %d records at once", se.BatchSize, stream.MaxConcurrent)
	}
	// Several batches of a shard at once (Lambda keeps each item's
	// records in order), so that one slow helpdesk request holds only its
	// own batch; within Lambda's 1 to 10.
	if se.ParallelizationFactor < 2 || se.ParallelizationFactor > 10 {
		t.Errorf("ParallelizationFactor %d, want 2 to 10", se.ParallelizationFactor)
	}
	if !slices.Equal(se.FunctionResponseTypes, []string{"ReportBatchItemFailures"}) || !se.BisectBatchOnFunctionError {
		t.Errorf("FunctionResponseTypes %v, bisect %v: internal/stream answers batchItemFailures", se.FunctionResponseTypes, se.BisectBatchOnFunctionError)
	}
	// Bounded (-1, the default, is forever) and within what Lambda takes:
	// retries 0-10,000; record age 60 s up to the stream's 24 hours.
	if r := se.MaximumRetryAttempts; r == nil || *r < 0 || *r > 10000 {
		t.Errorf("MaximumRetryAttempts %v", r)
	}
	if a := se.MaximumRecordAgeInSeconds; a == nil || *a < 60 || *a >= 24*3600 {
		t.Errorf("MaximumRecordAgeInSeconds %v: bounded, and short of the stream's 24 hours so that the records a failure points at can still be read", a)
	}
	if se.DestinationConfig.OnFailure.Type != "SQS" || se.DestinationConfig.OnFailure.Destination != "getatt:DeliveryFailureQueue.Arn" {
		t.Errorf("OnFailure %+v, want DeliveryFailureQueue", se.DestinationConfig.OnFailure)
	}
	if len(se.FilterCriteria.Filters) != 1 {
		t.Fatalf("%d filters, want one", len(se.FilterCriteria.Filters))
	}
	q := deploy(t, webhook).Properties("DeliveryFailureQueue")
	if q["SqsManagedSseEnabled"] != true || q["MessageRetentionPeriod"] != float64(14*24*3600) {
		t.Errorf("DeliveryFailureQueue %v: encrypted, kept 14 days", q)
	}
}

// TestTemplateStreamFilterSelectsQueuedTickets writes items the way
// internal/dynamo writes them, into the embedded store, reads them back,
// and applies the event source's filter to the stream records those writes
// make: only the creation of a ticket queued for delivery passes.
func TestTemplateStreamFilterSelectsQueuedTickets(t *testing.T) {
	pattern := streamEventOf(t, deploy(t, webhook)).FilterCriteria.Filters[0].Pattern
	const table = "filter-test"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := dynamo.WithClock(func() time.Time { return now })
	_, client := samtest.StartStore(t, table, clock)
	store := dynamo.New(client, table, clock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(id, request string, out *delivery.Record) (opKey string) {
		t.Helper()
		rec, tk := sampleOperation(id, request, now)
		if existing, taken, err := store.Create(ctx, rec, tk, out); err != nil || taken {
			t.Fatalf("create %s: %v %v", id, existing, err)
		}
		return rec.Key
	}
	queued := &delivery.Record{State: delivery.Queued, Destination: config.DestinationWebhook, Key: delivery.Key("op", "t1"), Since: now, Version: 1}
	opKey := create("00000000-0000-4000-8000-0000000000a1", "req-queued", queued)
	create("00000000-0000-4000-8000-0000000000a2", "req-plain", nil)
	get := func(pk string) map[string]types.AttributeValue {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("read %s: %v", pk, err)
		}
		return out.Item
	}
	queuedItem := get("ticket#00000000-0000-4000-8000-0000000000a1")
	match := func(name, eventName string, item map[string]types.AttributeValue, want bool) {
		t.Helper()
		rec, err := samtest.StreamRecord(eventName, "100", "arn:aws:dynamodb:eu-west-1:123456789012:table/filter-test/stream/x", now, item)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rec)
		got, err := mapping.MatchFilter(pattern, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: the filter passes it = %v, want %v\n%s", name, got, want, b)
		}
	}
	match("a new ticket queued for delivery", "INSERT", queuedItem, true)
	match("a new ticket without a destination", "INSERT", get("ticket#00000000-0000-4000-8000-0000000000a2"), false)
	match("a new operation", "INSERT", get("op#"+opKey), false)
	match("a user", "INSERT", get("user#user-a"), false)
	match("a removed ticket", "REMOVE", queuedItem, false)

	// The worker leases the ticket (a MODIFY still "queued") and records
	// it delivered (a MODIFY, "delivered"): neither invokes the worker.
	_, rec, err := store.Lease(ctx, "00000000-0000-4000-8000-0000000000a1", delivery.Lease{Owner: "owner-1", From: now, Until: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	match("the lease of a queued ticket", "MODIFY", get("ticket#00000000-0000-4000-8000-0000000000a1"), false)
	rec.State, rec.DeliveredAt, rec.Receipt = delivery.Delivered, now, delivery.Receipt{ID: "1"}
	if err := store.Finish(ctx, "00000000-0000-4000-8000-0000000000a1", "owner-1", rec); err != nil {
		t.Fatal(err)
	}
	delivered := get("ticket#00000000-0000-4000-8000-0000000000a1")
	match("a delivered ticket", "MODIFY", delivered, false)
	match("a delivered ticket, were it ever inserted so (a restore)", "INSERT", delivered, false)
}

// sampleOperation is an operation of user-a creating ticket id, as the
// callback builds them.
func sampleOperation(id, request string, now time.Time) (idempotency.Record, ticket.Ticket) {
	key := fmt.Sprintf("%064x", fnvHash(id))
	tk := ticket.Ticket{
		ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "Cannot sign in", Priority: "high",
		CreatedAt: now, OperationKey: key, RequestID: request,
	}
	result, _ := json.Marshal(map[string]any{"status": "created", "ticket_id": id})
	rec := idempotency.Record{
		Key: key, UserID: "user-a", Tenant: "tenant-a", Function: "create_ticket", State: idempotency.Completed,
		TicketID: id, Result: result, CreatedAt: now, ExpiresAt: now.Add(idempotency.DefaultRetention),
	}
	return rec, tk
}

func fnvHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func TestTemplateDeliverRole(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		secret    string
	}{
		{"created secret", webhook, "ref:DestinationSecret"},
		{"existing secret", with(webhook, "DestinationSecretArn", existingDestSecret), existingDestSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := deploy(t, tc.overrides)
			// The worker's store calls, those on the table's items on
			// tickets only (dynamodb:LeadingKeys), but for the read of a
			// ticket's user record before a create: a grant without the
			// condition, or with another, fails.
			want := map[samtest.Grant]bool{}
			for g := range samtest.StoreGrants("getatt:Table.Arn", workerCalls...) {
				if g.Resource == "getatt:Table.Arn" {
					g.Keys = "ticket#*"
					if g.Action == "dynamodb:GetItem" {
						g.Keys = "ticket#*,user#*"
					}
				}
				// Its updates name the delivery's own attributes only and
				// return nothing: a role that lets the worker write the
				// audit of a person's decision, or the ticket's content,
				// fails.
				if g.Action == "dynamodb:UpdateItem" {
					g.Attrs, g.Returns = strings.Join(dynamo.WorkerAttributes(), ","), "NONE"
				}
				want[g] = true
			}
			// The event source mapping reads the stream and writes the
			// on-failure queue with the function's role.
			for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"} {
				want[samtest.Grant{Action: a, Resource: "getatt:Table.StreamArn"}] = true
			}
			want[samtest.Grant{Action: "sqs:SendMessage", Resource: "getatt:DeliveryFailureQueue.Arn"}] = true
			want[samtest.Grant{Action: "secretsmanager:GetSecretValue", Resource: tc.secret}] = true
			for _, a := range []string{"logs:CreateLogStream", "logs:PutLogEvents"} {
				want[samtest.Grant{Action: a, Resource: "getatt:DeliverLogGroup.Arn"}] = true
			}
			got := samtest.Grants(samtest.Allowed(t, s, "DeliverRole"))
			// A settlement's update (oncecall-admin's) writes the audit and
			// asks for the item back: the worker's role refuses it.
			settle := samtest.Grant{
				Action: "dynamodb:UpdateItem", Resource: "getatt:Table.Arn", Key: "ticket#00000000-0000-4000-8000-000000000001",
				Attrs: "attn,attn_at,audit,delivery,dver,lease_owner,lease_until,next_at,pk,reason,since", Returns: "ALL_NEW",
			}
			if g, ok := samtest.Permits(got, settle); ok {
				t.Errorf("DeliverRole's %s allows a settlement's write of the audit", g)
			}
			settle.Returns = "NONE"
			if g, ok := samtest.Permits(got, settle); ok {
				t.Errorf("DeliverRole's %s allows a write of the audit", g)
			}
			for g := range want {
				if !got[g] {
					t.Errorf("DeliverRole lacks %s", g)
				}
			}
			for g := range got {
				if !want[g] {
					t.Errorf("DeliverRole allows %s, which the worker does not need", g)
				}
			}
			if env := s.Env("DeliverFunction"); env[config.EnvDestinationSecret] != tc.secret {
				t.Errorf("%s = %q, but the role allows %q", config.EnvDestinationSecret, env[config.EnvDestinationSecret], tc.secret)
			}
		})
	}
	for _, c := range workerCalls {
		if !slices.Contains(samtest.Methods[dynamo.API](), c.Method) {
			t.Errorf("the worker is said to call %s, which dynamo.API does not have", c.Method)
		}
	}
}

// TestTemplateDestinationSecret: a created secret holds nothing either
// adapter accepts, so the worker stops at its cold start until a person
// puts the credentials; the template never holds one.
func TestTemplateDestinationSecret(t *testing.T) {
	for _, dest := range []map[string]string{webhook, {"Destination": "zendesk", "ZendeskSubdomain": "acme"}} {
		s := deploy(t, dest)
		sec, err := s.Typed.GetSecretsManagerSecretWithName("DestinationSecret")
		if err != nil {
			t.Fatal(err)
		}
		if sec.GenerateSecretString != nil || sec.SecretString == nil {
			t.Fatalf("DestinationSecret %+v: a fixed placeholder, never a generated credential", sec)
		}
		_, err = app.Destination(config.Delivery{Destination: dest["Destination"], URL: "https://x.example", Token: *sec.SecretString, Timeout: time.Second})
		if err == nil {
			t.Errorf("%s accepts the placeholder %q as credentials", dest["Destination"], *sec.SecretString)
		}
		if o := s.Eval["Outputs"].(map[string]any)["DestinationSecretArn"].(map[string]any)["Value"]; o != "ref:DestinationSecret" {
			t.Errorf("output DestinationSecretArn = %v", o)
		}
	}
}

// emfMetrics are every metric name the worker writes (internal/metrics).
func emfMetrics() []string {
	return append(slices.Clone(delivery.AttemptOutcomes), metrics.Attempts, metrics.Latency, metrics.DeliveryLatency, metrics.AuthFailed,
		metrics.QueuedBacklog, metrics.OldestQueuedAge, metrics.UncertainBacklog, metrics.FailedBacklog)
}

func TestTemplateDeliveryAlarms(t *testing.T) {
	s := deploy(t, with(webhook, "AlarmTopicArn", topic, "OldestQueuedAlarmSeconds", "600", "IteratorAgeAlarmSeconds", "120", "MetricsNamespace", "acme"))
	emf := func(name, metric string, threshold float64) {
		t.Helper()
		a, err := s.Typed.GetCloudWatchAlarmWithName(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.MetricName == nil || *a.MetricName != metric || !slices.Contains(emfMetrics(), metric) {
			t.Errorf("%s reads %q, want %s (a metric the worker writes)", name, aws.ToString(a.MetricName), metric)
		}
		if a.Namespace == nil || *a.Namespace != "acme" || len(a.Dimensions) != 1 || a.Dimensions[0].Name != metrics.Dimension || a.Dimensions[0].Value != "ref:DeliverFunction" {
			t.Errorf("%s: namespace %v dimensions %v, want the worker's EMF metrics", name, a.Namespace, a.Dimensions)
		}
		if a.Threshold == nil || *a.Threshold != threshold || a.ComparisonOperator != "GreaterThanThreshold" {
			t.Errorf("%s: %s %v, want > %v", name, a.ComparisonOperator, a.Threshold, threshold)
		}
		if !slices.Equal(a.AlarmActions, []string{topic}) {
			t.Errorf("%s notifies %v", name, a.AlarmActions)
		}
	}
	emf("DeliveryUncertainAlarm", metrics.UncertainBacklog, 0)
	emf("OldestQueuedAlarm", metrics.OldestQueuedAge, 600)
	emf("DeliveryAuthFailedAlarm", metrics.AuthFailed, 0)
	if a, _ := s.Typed.GetCloudWatchAlarmWithName("OldestQueuedAlarm"); a.TreatMissingData == nil || *a.TreatMissingData != "breaching" {
		t.Error("OldestQueuedAlarm: missing data (no sweep) must breach")
	}
	q, _ := s.Typed.GetCloudWatchAlarmWithName("DeliveryFailureQueueAlarm")
	if *q.Namespace != "AWS/SQS" || *q.MetricName != "ApproximateNumberOfMessagesVisible" || q.Dimensions[0].Value != "getatt:DeliveryFailureQueue.QueueName" ||
		*q.Threshold != 0 || q.ComparisonOperator != "GreaterThanThreshold" || !slices.Equal(q.AlarmActions, []string{topic}) {
		t.Errorf("DeliveryFailureQueueAlarm watches %v %v %v", *q.Namespace, *q.MetricName, q.Dimensions)
	}
	it, _ := s.Typed.GetCloudWatchAlarmWithName("DeliverIteratorAgeAlarm")
	var read, expr string
	for _, m := range it.Metrics {
		if m.MetricStat != nil {
			ms := m.MetricStat.Metric
			read = *ms.Namespace + " " + *ms.MetricName + " " + ms.Dimensions[0].Value
		}
		if m.Expression != nil && m.ReturnData != nil && *m.ReturnData {
			expr = *m.Expression
		}
	}
	if read != "AWS/Lambda IteratorAge ref:DeliverFunction" || expr != "age / 1000" || *it.Threshold != 120 || !slices.Equal(it.AlarmActions, []string{topic}) {
		t.Errorf("DeliverIteratorAgeAlarm reads %q as %q against %v", read, expr, *it.Threshold)
	}
	// Without AlarmTopicArn nothing is notified.
	s = deploy(t, webhook)
	for _, name := range []string{"DeliveryUncertainAlarm", "OldestQueuedAlarm", "DeliveryFailureQueueAlarm", "DeliveryAuthFailedAlarm", "DeliverIteratorAgeAlarm"} {
		if a, _ := s.Typed.GetCloudWatchAlarmWithName(name); a.AlarmActions != nil || a.OKActions != nil {
			t.Errorf("%s notifies without AlarmTopicArn", name)
		}
	}
}

func dashboard(t *testing.T, s *samtest.Stack) string {
	t.Helper()
	d, err := s.Typed.GetCloudWatchDashboardWithName("Dashboard")
	if err != nil {
		t.Fatal(err)
	}
	return d.DashboardBody
}

type widget struct {
	Type                string
	X, Y, Width, Height int
	Properties          struct {
		Title    string
		View     string
		Markdown string
		Query    string
		Metrics  []json.RawMessage
	}
}

func widgets(t *testing.T, s *samtest.Stack) []widget {
	t.Helper()
	var body struct{ Widgets []widget }
	if err := json.Unmarshal([]byte(dashboard(t, s)), &body); err != nil {
		t.Fatalf("the dashboard is not JSON: %v\n%s", err, dashboard(t, s))
	}
	return body.Widgets
}

// metricRows expands a widget's metric rows into namespace, name and the
// first dimension's value. CloudWatch's shorthand: "." repeats the value
// at that position in the row above, and a leading "..." repeats the row
// above's leading values, as many as the values given after it leave.
func metricRows(t *testing.T, w widget) [][3]string {
	t.Helper()
	var out [][3]string
	var prev []string
	for _, raw := range w.Properties.Metrics {
		var row []any
		_ = json.Unmarshal(raw, &row)
		var cells []string
		for _, c := range row {
			if s, ok := c.(string); ok {
				cells = append(cells, s)
			}
		}
		if len(cells) == 0 {
			continue // an expression
		}
		if cells[0] == "..." {
			rest := cells[1:]
			if len(rest) > len(prev) {
				t.Fatalf("widget %q: row %s repeats more than the row above has", w.Properties.Title, raw)
			}
			cells = append(slices.Clone(prev[:len(prev)-len(rest)]), rest...)
		}
		for i, c := range cells {
			if c == "." && i < len(prev) {
				cells[i] = prev[i]
			}
		}
		if len(cells) < 4 {
			t.Fatalf("widget %q row %s is not namespace, name, dimension, value", w.Properties.Title, raw)
		}
		prev = cells
		out = append(out, [3]string{cells[0], cells[1], cells[3]})
	}
	return out
}

func TestTemplateDeliveryDashboard(t *testing.T) {
	s := deploy(t, with(webhook, "MetricsNamespace", "acme", "RepositoryUrl", "https://github.com/acme/oncecall/blob/main"))
	ws := widgets(t, s)
	plotted := map[string]bool{}
	var table, text *widget
	for i, w := range ws {
		for _, r := range metricRows(t, w) {
			if r[0] == "acme" && r[2] == "ref:DeliverFunction" {
				if !slices.Contains(emfMetrics(), r[1]) {
					t.Errorf("widget %q plots %s, which the worker never writes", w.Properties.Title, r[1])
				}
				plotted[r[1]] = true
			}
			plotted[r[0]+" "+r[1]+" "+r[2]] = true
		}
		if w.Type == "log" && strings.Contains(w.Properties.Query, "stats count(*) as operations by last_state") {
			table = &ws[i]
		}
		if w.Type == "text" {
			text = &ws[i]
		}
		if w.X < 0 || w.Width < 1 || w.X+w.Width > 24 {
			t.Errorf("widget %q is outside the dashboard's 24 columns", w.Properties.Title)
		}
		for _, o := range ws[:i] {
			if w.X < o.X+o.Width && o.X < w.X+w.Width && w.Y < o.Y+o.Height && o.Y < w.Y+w.Height {
				t.Errorf("widgets %q and %q overlap", w.Properties.Title, o.Properties.Title)
			}
		}
	}
	for _, m := range append(slices.Clone(delivery.AttemptOutcomes), metrics.DeliveryLatency, metrics.Latency, metrics.AuthFailed,
		metrics.QueuedBacklog, metrics.OldestQueuedAge, metrics.UncertainBacklog, metrics.FailedBacklog) {
		if !plotted[m] {
			t.Errorf("the dashboard does not plot %s", m)
		}
	}
	for _, m := range []string{"AWS/SQS ApproximateNumberOfMessagesVisible getatt:DeliveryFailureQueue.QueueName", "AWS/Lambda IteratorAge ref:DeliverFunction"} {
		if !plotted[m] {
			t.Errorf("the dashboard does not plot %s", m)
		}
	}
	// The table of operations by delivery state reads the attempts' log
	// lines of both functions (inline attempts are the callback's).
	if table == nil || table.Properties.View != "table" {
		t.Fatal("no table widget of operations by delivery state")
	}
	for _, part := range []string{"SOURCE 'ref:DeliverLogGroup'", "SOURCE 'ref:CallbackLogGroup'", "filter message = 'delivery'", "stats latest(state) as last_state by ticket_id"} {
		if !strings.Contains(table.Properties.Query, part) {
			t.Errorf("the table's query lacks %q: %s", part, table.Properties.Query)
		}
	}
	if text == nil || !strings.Contains(text.Properties.Markdown, "(https://github.com/acme/oncecall/blob/main/docs/runbook.md#"+runbookAnchor+")") {
		t.Errorf("no runbook link in the dashboard: %+v", text)
	}
	ws = widgets(t, deploy(t, webhook))
	for _, w := range ws {
		if w.Type == "text" && (!strings.Contains(w.Properties.Markdown, "docs/runbook.md") || !strings.Contains(w.Properties.Markdown, runbookHeading)) {
			t.Errorf("without RepositoryUrl the text names no runbook: %q", w.Properties.Markdown)
		}
	}
	// Inline attempts: their own widget, on the callback's metrics.
	inline := 0
	for _, w := range widgets(t, deploy(t, with(webhook, "DeliveryInlineTimeout", "1s", "DestinationSecretArn", existingDestSecret))) {
		for _, r := range metricRows(t, w) {
			if r[2] == "ref:CallbackFunction" && r[1] == delivery.OutcomeDelivered {
				inline++
			}
		}
	}
	if inline != 1 {
		t.Errorf("%d widgets plot the callback's inline deliveries, want 1", inline)
	}
}

// runbookHeading is the section of docs/runbook.md the dashboard links to;
// GitHub makes runbookAnchor of it.
const (
	runbookHeading = "A delivery is uncertain"
	runbookAnchor  = "a-delivery-is-uncertain"
)

func TestRunbookAnchorIsGitHubs(t *testing.T) {
	page := string(readFile(t, "../../docs/runbook.md"))
	if !strings.Contains(page, "\n## "+runbookHeading+"\n") {
		t.Errorf("docs/runbook.md has no section %q", runbookHeading)
	}
	if !doctest.Anchors(page)[runbookAnchor] {
		t.Errorf("GitHub makes no anchor %q of docs/runbook.md's headings", runbookAnchor)
	}
}

// durationCandidates are values a person might type for a duration: whole
// numbers around every bound with each unit, and odd forms.
func durationCandidates() []string {
	nums := []int{0, 1, 2, 5, 9, 10, 30, 59, 60, 61, 99, 100, 101, 119, 120, 159, 160, 168, 169, 500, 599, 600, 700, 719, 720, 721,
		999, 1000, 1500, 2999, 3000, 3599, 3600, 3601, 4999, 5000, 5001, 9999, 10000, 10079, 10080, 10081, 39999, 40000, 42999,
		43000, 43199, 43200, 43201, 99999, 100000, 599999, 600000, 603999, 604000, 604799, 604800, 604801, 999999}
	var out []string
	for _, n := range nums {
		for _, u := range []string{"", "ms", "s", "m", "h"} {
			out = append(out, strconv.Itoa(n)+u)
		}
	}
	return append(out, "", "1.5h", "0.5s", "-1s", "1d", "01m", " 1s", "1s ", "1h30m", "+1s", "1S", "1H", "1us", "1ns", "0s", "0m", "0h", "0ms")
}

// TestTemplateDeliveryParametersMatchTheCode checks each delivery
// parameter's constraint against config.Load over many candidate values:
// every value the template accepts, the worker accepts with the same
// meaning; and every value in the code's bounds written as a whole number
// with one of the units the parameter's description uses, the template
// accepts too.
func TestTemplateDeliveryParametersMatchTheCode(t *testing.T) {
	params := samtest.Read(t, templatePath)["Parameters"].(map[string]any)
	zendesk := map[string]string{"Destination": "zendesk", "ZendeskSubdomain": "acme"}
	ids := []string{"1", "42", "360001234567", "999999999999999999"}
	for _, tc := range []struct {
		param, env string
		base       map[string]string
		candidates []string
		// units are the forms the template promises to accept in bounds
		// (a whole number and one of them); mustAccept lists values it
		// must accept besides.
		units      []string
		mustAccept []string
		// zeroIsText: the template's conditions compare the value with
		// "0", so "0" is the one spelling of zero it accepts.
		zeroIsText bool
	}{
		{"DestinationDedupWindow", config.EnvDedupWindow, webhook, durationCandidates(), []string{"s", "m", "h"}, []string{"0"}, false},
		{"DestinationSettleDelay", config.EnvSettleDelay, webhook, durationCandidates(), []string{"s", "m", "h"}, []string{"0"}, false},
		{"DestinationRequestHorizon", config.EnvRequestHorizon, webhook, durationCandidates(), []string{"s", "m", "h"}, []string{"0"}, false},
		{"DestinationTimeout", config.EnvDestinationTimeout, webhook, durationCandidates(), []string{"s"}, []string{"1m"}, false},
		{"DestinationMaxAge", config.EnvMaxAge, webhook, durationCandidates(), []string{"m", "h"}, nil, false},
		{"DeliveryInlineTimeout", config.EnvInlineTimeout, with(webhook, "DestinationSecretArn", existingDestSecret), durationCandidates(), []string{"ms", "s"}, []string{"0"}, true},
		{"DestinationMaxAttempts", config.EnvMaxAttempts, webhook, intCandidates(), []string{""}, nil, false},
		// Zendesk ids: up to 18 digits, always within int64.
		{"ZendeskTenantField", config.EnvZendeskTenantField, zendesk, idCandidates(), nil, ids, false},
		{"ZendeskRequesterField", config.EnvZendeskUserField, zendesk, idCandidates(), nil, ids, false},
		{"ZendeskRequesterId", config.EnvZendeskRequester, zendesk, idCandidates(), nil, ids, false},
		{"RtQueue", config.EnvRTQueue, rtBase, queueCandidates(), nil, []string{"General", "IT Support", "7"}, false},
	} {
		t.Run(tc.param, func(t *testing.T) {
			p := params[tc.param].(map[string]any)
			// What the code accepts, asked of config.Load itself, with the
			// rest of a valid deployed environment around the value.
			env := map[string]string{}
			for k, v := range deploy(t, tc.base).Env("DeliverFunction") {
				env[k] = strings.NewReplacer("ref:Table", "t-abc", "ref:DestinationSecret", existingDestSecret).Replace(v)
			}
			codeAccepts := func(v string) (config.Delivery, bool) {
				e := maps.Clone(env)
				e[tc.env] = v
				if v == "" {
					delete(e, tc.env)
				}
				c, err := config.Load(func(k string) string { return e[k] }, config.Worker, app.FunctionNames())
				return c.Delivery, err == nil
			}
			var accepted []string
			for _, v := range append(slices.Clone(tc.candidates), tc.mustAccept...) {
				if samtest.CheckParameter(p, v) != nil {
					zero := false
					if d, err := time.ParseDuration(v); err == nil && d == 0 {
						zero = true
					}
					must := slices.Contains(tc.mustAccept, v) || (canonical(v, tc.units) && (!tc.zeroIsText || !zero))
					if _, ok := codeAccepts(v); ok && must {
						t.Errorf("%s refuses %q, which the code accepts", tc.param, v)
					}
					continue
				}
				accepted = append(accepted, v)
				if _, ok := codeAccepts(v); !ok {
					t.Errorf("%s accepts %q, which the code refuses at cold start", tc.param, v)
				}
			}
			if len(accepted) < 2 {
				t.Fatalf("%s accepts %v of the candidates", tc.param, accepted)
			}
			// The value reaches the function as typed: deploy one and load.
			v := accepted[len(accepted)-1]
			want, _ := codeAccepts(v)
			c, err := loadWorker(t, deploy(t, with(tc.base, tc.param, v)))
			if err != nil || c.Delivery != want {
				t.Errorf("%s=%q deploys as %+v (%v), want %+v", tc.param, v, c.Delivery, err, want)
			}
		})
	}
}

func intCandidates() []string {
	var out []string
	for _, n := range []int{-1, 0, 1, 2, 9, 10, 50, 99, 100, 101, 1000} {
		out = append(out, strconv.Itoa(n))
	}
	return append(out, "", "01", "1.0", "1e2", " 5", "five")
}

// rtBase deploys Request Tracker as the destination.
var rtBase = map[string]string{"Destination": "rt", "DestinationUrl": "https://rt.acme.test"}

func queueCandidates() []string {
	return []string{"", "General", "IT Support", "7", "Ünicode queue", " General", "General ", "a\tb", "a\nb", "x\x7f",
		strings.Repeat("q", 200), strings.Repeat("q", 201), strings.Repeat("é", 200), strings.Repeat("é", 201)}
}

func idCandidates() []string {
	return []string{"", "0", "1", "42", "360001234567", "999999999999999999", "9223372036854775807", "9223372036854775808", "-1", "01", "1.5", "x"}
}

// canonical reports whether v is a whole number (no sign, no leading zero)
// followed by one of units.
func canonical(v string, units []string) bool {
	for _, u := range units {
		n, ok := strings.CutSuffix(v, u)
		if !ok || n == "" {
			continue
		}
		if _, err := strconv.ParseUint(n, 10, 64); err == nil && (n == "0" || n[0] != '0') {
			return true
		}
	}
	return false
}

// TestTemplateRulesRefuseWhatTheCodeRefuses: each combination the
// template's Rules refuse at deploy time is one the code would refuse at
// cold start (or, for inline attempts with a created secret, one whose
// cold start would meet the placeholder), and the combinations that make
// sense deploy.
func TestTemplateRulesRefuseWhatTheCodeRefuses(t *testing.T) {
	zendesk := map[string]string{"Destination": "zendesk", "ZendeskSubdomain": "acme"}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		// env is what the worker would be started with, "" for the
		// template's own rule.
		env map[string]string
	}{
		{"a URL without a destination", map[string]string{"DestinationUrl": webhookURL}, map[string]string{config.EnvDestinationURL: webhookURL}},
		{"a secret without a destination", map[string]string{"DestinationSecretArn": existingDestSecret}, map[string]string{config.EnvDestinationSecret: existingDestSecret}},
		{"inline attempts without a destination", map[string]string{"DeliveryInlineTimeout": "1s"}, map[string]string{config.EnvInlineTimeout: "1s"}},
		{"webhook without a URL", map[string]string{"Destination": "webhook"}, map[string]string{config.EnvDestination: "webhook"}},
		{"webhook with a Zendesk subdomain", with(webhook, "ZendeskSubdomain", "acme"), map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: webhookURL, config.EnvZendeskSubdomain: "acme"}},
		{"webhook with a Zendesk field", with(webhook, "ZendeskTenantField", "5"), map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: webhookURL, config.EnvZendeskTenantField: "5"}},
		{"zendesk without a subdomain", map[string]string{"Destination": "zendesk"}, map[string]string{config.EnvDestination: "zendesk"}},
		{"zendesk with a subdomain and a URL", with(zendesk, "DestinationUrl", webhookURL), map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "acme", config.EnvDestinationURL: webhookURL}},
		{"zendesk with a dedup window", with(zendesk, "DestinationDedupWindow", "1h"), map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "acme", config.EnvDedupWindow: "1h"}},
		{"zendesk with lookup", with(zendesk, "DestinationLookup", "true"), map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "acme", config.EnvLookup: "true"}},
		{"inline attempts with a created secret", with(webhook, "DeliveryInlineTimeout", "1s"), nil},
		{"a bad destination", map[string]string{"Destination": "jira"}, map[string]string{config.EnvDestination: "jira"}},
		{"an http URL", map[string]string{"Destination": "webhook", "DestinationUrl": "http://helpdesk.example.com"}, nil},
		{"rt without a URL", map[string]string{"Destination": "rt"}, map[string]string{config.EnvDestination: "rt"}},
		{"rt with a Zendesk subdomain", with(rtBase, "ZendeskSubdomain", "acme"), map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.acme.test", config.EnvZendeskSubdomain: "acme"}},
		{"rt with lookup", with(rtBase, "DestinationLookup", "true"), map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.acme.test", config.EnvLookup: "true"}},
		{"rt with a dedup window", with(rtBase, "DestinationDedupWindow", "1h"), map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.acme.test", config.EnvDedupWindow: "1h"}},
		{"webhook with an RT queue", with(webhook, "RtQueue", "General"), map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: webhookURL, config.EnvRTQueue: "General"}},
		{"zendesk with an RT queue", with(zendesk, "RtQueue", "General"), map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "acme", config.EnvRTQueue: "General"}},
		{"an RT queue without a destination", map[string]string{"RtQueue": "General"}, map[string]string{config.EnvRTQueue: "General"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := samtest.Refusal(t, templatePath, tc.overrides); err == nil {
				t.Errorf("%v deploys", tc.overrides)
			} else {
				t.Logf("refused: %v", err)
			}
			if tc.env != nil {
				e := maps.Clone(tc.env)
				e[config.EnvTable] = "t-abc"
				_, err := config.Load(func(k string) string { return e[k] }, config.Worker, app.FunctionNames())
				switch {
				case err == nil:
					t.Errorf("the code accepts %v, which the template refuses", tc.env)
				case strings.Contains(err.Error(), config.EnvHookKey):
					t.Errorf("refused for the hook key, not for %v: %v", tc.env, err)
				}
			}
		})
	}
	for _, ok := range []map[string]string{
		nil, webhook, zendesk,
		with(webhook, "DestinationDedupWindow", "24h", "DestinationLookup", "true", "DestinationSecretArn", existingDestSecret),
		with(zendesk, "DeliveryInlineTimeout", "2s", "DestinationSecretArn", existingDestSecret, "ZendeskRequesterId", "9"),
		{"Destination": "zendesk", "DestinationUrl": "https://support.acme.test"},
		rtBase, with(rtBase, "RtQueue", "IT Support", "DestinationSettleDelay", "2m"),
		with(rtBase, "DeliveryInlineTimeout", "2s", "DestinationSecretArn", existingDestSecret, "RtQueue", "7"),
	} {
		if err := samtest.Refusal(t, templatePath, ok); err != nil {
			t.Errorf("%v is refused: %v", ok, err)
		}
	}
}

func TestTemplateDeliveryOutputs(t *testing.T) {
	s := deploy(t, with(webhook, "DestinationSecretArn", existingDestSecret))
	want := map[string]string{
		"DeliverFunctionName":     "ref:DeliverFunction",
		"DeliverLogGroupName":     "ref:DeliverLogGroup",
		"DestinationSecretArn":    existingDestSecret,
		"DeliveryFailureQueueUrl": "ref:DeliveryFailureQueue",
		"TableStreamArn":          "getatt:Table.StreamArn",
	}
	for name, v := range want {
		if o, ok := s.Typed.Outputs[name]; !ok || o.Value != v {
			t.Errorf("output %s = %v, want %s", name, o.Value, v)
		}
	}
}

// TestSAMLocalEnv: `sam local invoke DeliverFunction --env-vars
// events/deliver/sam-env.json` only overrides variables the template
// declares, and with its overrides the worker starts against `make run`'s
// store and helpdesk.
func TestSAMLocalEnv(t *testing.T) {
	raw := readFile(t, "../../events/deliver/sam-env.json")
	var byFunction map[string]map[string]string
	if err := json.Unmarshal(raw, &byFunction); err != nil {
		t.Fatal(err)
	}
	vars, ok := byFunction["DeliverFunction"]
	if !ok || len(byFunction) != 1 {
		t.Fatal("events/deliver/sam-env.json is not keyed by DeliverFunction")
	}
	env := deploy(t, webhook).Env("DeliverFunction")
	for k := range vars {
		if _, declared := env[k]; !declared {
			t.Errorf("sam-env.json sets %s, which template.yaml does not declare for DeliverFunction: SAM would ignore it", k)
		}
	}
	maps.Copy(env, vars)
	c, err := config.Load(func(k string) string { return env[k] }, config.Worker, app.FunctionNames())
	if err != nil {
		t.Fatalf("the local overrides do not start the worker: %v", err)
	}
	// The cold start builds the destination from it (app.Worker): the
	// helpdesk on the host, which the container reaches as
	// host.docker.internal over plain http.
	if _, err := app.Destination(c.Delivery); err != nil {
		t.Errorf("the local overrides' destination %s is refused at cold start: %v", c.Delivery.URL, err)
	}
	// The same URL is refused wherever the store is not local: plain
	// http to host.docker.internal is for sam local invoke only.
	for _, endpoint := range []string{"", "https://dynamodb.eu-west-1.amazonaws.com", "http://db.example.com:8000"} {
		e := maps.Clone(env)
		e[config.EnvEndpoint] = endpoint
		_, err := config.Load(func(k string) string { return e[k] }, config.Worker, app.FunctionNames())
		if err == nil || !strings.Contains(err.Error(), config.EnvDestinationURL+": plain http") {
			t.Errorf("%s=%q with %s=%s: %v, want it refused", config.EnvEndpoint, endpoint, config.EnvDestinationURL, vars[config.EnvDestinationURL], err)
		}
	}
}

// TestDocsNameTheTemplate: docs/configuration.md names every parameter of
// template.yaml, docs/deploy.md every output, and docs/runbook.md every
// alarm, so that a new one cannot be added without saying what it does.
func TestDocsNameTheTemplate(t *testing.T) {
	raw := samtest.Read(t, templatePath)
	var alarms []string
	for name, r := range raw["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == "AWS::CloudWatch::Alarm" {
			alarms = append(alarms, name)
		}
	}
	for _, c := range []struct {
		page  string
		names []string
	}{
		{"docs/configuration.md", names(raw["Parameters"].(map[string]any))},
		{"docs/deploy.md", names(raw["Outputs"].(map[string]any))},
		{"docs/runbook.md", alarms},
	} {
		text := string(readFile(t, "../../"+c.page))
		for _, w := range c.names {
			if !strings.Contains(text, "`"+w+"`") {
				t.Errorf("%s does not name %s", c.page, w)
			}
		}
	}
	// The deploy page's opening, before its first section, names every
	// route of the HTTP API.
	deploy := string(readFile(t, "../../docs/deploy.md"))
	// Its list of the stack's outputs names every output, and nothing
	// else, each in the sentence of its condition.
	outputs, _ := doctest.Section(deploy, "### The stack's outputs")
	_, list, ok := strings.Cut(outputs, "The outputs")
	if !ok {
		t.Fatal("docs/deploy.md's outputs section has no list of the outputs")
	}
	list, _, _ = strings.Cut(list, "\n\n")
	lead := map[string]string{"": "every stack", "HasDestination": "With a destination",
		"HasEdge": "With the edge", "RecordTableWrites": "With `TableDataEvents=true`"}
	sentences := map[string]string{}
	for _, s := range strings.Split(strings.Join(strings.Fields(list), " "), ". ") {
		for cond, l := range lead {
			if strings.Contains(s, l) {
				sentences[cond] += s
			}
		}
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]+)`").FindAllStringSubmatch(list, -1) {
		listed[m[1]] = true
	}
	outs := raw["Outputs"].(map[string]any)
	for name, o := range outs {
		cond, _ := o.(map[string]any)["Condition"].(string)
		if !listed[name] {
			t.Errorf("docs/deploy.md's list of the stack's outputs leaves out %s", name)
		} else if !strings.Contains(sentences[cond], "`"+name+"`") {
			t.Errorf("docs/deploy.md lists %s outside the sentence of its condition %q (%q)", name, cond, lead[cond])
		}
	}
	for name := range listed {
		if outs[name] == nil && !strings.Contains(lead["RecordTableWrites"], name) {
			t.Errorf("docs/deploy.md lists the output %s, which template.yaml does not have", name)
		}
	}
	opening, _, _ := strings.Cut(deploy, "\n## ")
	opening = strings.Join(strings.Fields(opening), " ")
	routes := 0
	for _, r := range raw["Resources"].(map[string]any) {
		props, _ := r.(map[string]any)["Properties"].(map[string]any)
		events, _ := props["Events"].(map[string]any)
		for _, e := range events {
			e := e.(map[string]any)
			if e["Type"] != "HttpApi" {
				continue
			}
			p := e["Properties"].(map[string]any)
			route := fmt.Sprintf("`%s %s`", p["Method"], p["Path"])
			routes++
			if !strings.Contains(opening, route) {
				t.Errorf("docs/deploy.md's opening does not name the route %s", route)
			}
		}
	}
	if routes < 3 {
		t.Errorf("only %d HttpApi routes in the template", routes)
	}
	// The alarms it counts: those of every stack in the opening, those a
	// destination adds in its section.
	counts := map[string]int{}
	for _, r := range raw["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == "AWS::CloudWatch::Alarm" {
			cond, _ := r["Condition"].(string)
			counts[cond]++
		}
	}
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	destination, _, _ := strings.Cut(deploy[strings.Index(deploy, "\n## Deploying with a destination"):], "\n### ")
	for _, c := range []struct{ where, text, cond string }{
		{"opening", opening, ""},
		{"destination section", strings.Join(strings.Fields(destination), " "), "HasDestination"},
	} {
		if n := counts[c.cond]; n >= len(words) || !strings.Contains(c.text, " "+words[n]+" alarms") {
			t.Errorf("docs/deploy.md's %s does not count its %d alarms", c.where, n)
		}
	}
}
