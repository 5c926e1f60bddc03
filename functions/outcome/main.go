// Command outcome is the application's outcome read on AWS Lambda:
// GET /outcome behind the HTTP API route whose IAM authorization
// (AWS_IAM) is its credential. Its role may only read tickets and the id
// key that names them, never write. It only wires: settings, the store, the handler,
// lambda.Start.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/oncecall/oncecall/internal/apigw"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/protocol"
)

func main() {
	handle, err := handler(context.Background(), os.Getenv, lambdacontext.NewLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, "oncecall outcome:", err)
		os.Exit(1)
	}
	lambda.Start(handle)
}

// handler wires the read from the environment (TABLE_NAME, DESTINATION,
// EDGE_ORIGIN_SECRET_ARN, DYNAMODB_ENDPOINT for local runs).
func handler(ctx context.Context, getenv func(string) string, logger *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	cfg, err := config.Load(getenv, config.Reader, app.FunctionNames())
	if err != nil {
		return nil, err
	}
	awsCfg, err := app.AWSConfig(getenv, cfg)
	if err != nil {
		return nil, err
	}
	if cfg, err = app.ResolveEdgeToken(ctx, awsCfg, cfg); err != nil {
		return nil, err
	}
	read := apigw.New(app.OutcomeAPI(cfg, app.Store(awsCfg, cfg), logger)).Handle
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		// The route's AWS_IAM authorization is the credential: API
		// Gateway refuses an unsigned request before it gets here. An
		// event without a signer (a route left open by mistake) is
		// refused all the same.
		if ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.IAM == nil {
			a := protocol.Forbidden("iam_required", "GET /outcome takes IAM authorization (SigV4) only")
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusForbidden, Body: string(a.Body()),
				Headers: map[string]string{"content-type": "application/json", "cache-control": "no-store"}}, nil
		}
		return read(ctx, ev)
	}, nil
}
