package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

// TestOnlySignedReadsOfTheOutcomeAreServed: the function needs no hook
// key; it answers GET /outcome to an event API Gateway authorized with
// IAM, refuses one without a signer, and serves no other path.
func TestOnlySignedReadsOfTheOutcomeAreServed(t *testing.T) {
	env := dynamotest.New(t)
	vars := map[string]string{"TABLE_NAME": env.Table, "DYNAMODB_ENDPOINT": env.Endpoint, "AWS_REGION": "us-east-1"}
	handle, err := handler(context.Background(), func(k string) string { return vars[k] }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	signed := &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:sts::123456789012:assumed-role/app/x"}}
	ev := func(route, query string, auth *events.APIGatewayV2HTTPRequestContextAuthorizerDescription) events.APIGatewayV2HTTPRequest {
		return events.APIGatewayV2HTTPRequest{RouteKey: route, RawQueryString: query,
			RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: auth, Stage: "$default", DomainName: "api.example"}}
	}
	for _, c := range []struct {
		ev     events.APIGatewayV2HTTPRequest
		status int
		says   string
	}{
		{ev("GET /outcome", "user=user-a&request_id=r-1", signed), 200, `"status":"none"`},
		{ev("GET /outcome", "user=user-a&request_id=r-1", nil), 403, "iam_required"},
		{ev("POST /callback", "", signed), 404, "not_found"},
	} {
		res, err := handle(context.Background(), c.ev)
		if err != nil || res.StatusCode != c.status || !strings.Contains(res.Body, c.says) {
			t.Errorf("%s: %d %s %v, want %d %q", c.ev.RouteKey, res.StatusCode, res.Body, err, c.status, c.says)
		}
	}
}
