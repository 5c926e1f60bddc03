// Command callback is the oncecall Lambda function: API Gateway HTTP API
// (payload 2.0) events in, callback and MCP answers out. It only wires:
// settings, clients, the hook key and MCP token, the handler and its
// outbox, lambda.Start.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/oncecall/oncecall/internal/apigw"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
)

func main() {
	logger := lambdacontext.NewLogger()
	ctx := context.Background()
	cfg, err := config.Load(os.Getenv, config.Lambda, app.FunctionNames())
	if err != nil {
		fatal(err)
	}
	awsCfg, err := app.AWSConfig(os.Getenv, cfg)
	if err != nil {
		fatal(err)
	}
	if cfg, err = app.ResolveHookKey(ctx, awsCfg, cfg); err != nil {
		fatal(err)
	}
	if cfg, err = app.ResolveMCPToken(ctx, awsCfg, cfg); err != nil {
		fatal(err)
	}
	if cfg, err = app.ResolveEdgeToken(ctx, awsCfg, cfg); err != nil {
		fatal(err)
	}
	store := app.Store(awsCfg, cfg, dynamo.WithLogger(logger))
	// With a destination, new tickets are queued for it; the worker
	// function delivers them. Only inline first attempts need the
	// destination's credentials here.
	var w *delivery.Worker
	if cfg.Delivery.Inline > 0 {
		if cfg, err = app.ResolveDestinationSecret(ctx, awsCfg, cfg); err != nil {
			fatal(err)
		}
		if w, err = app.Worker(cfg, store, logger); err != nil {
			fatal(err)
		}
	}
	h, err := app.Handler(cfg, store, logger, app.Outbox(cfg, w))
	if err != nil {
		fatal(err)
	}
	// Keys from the secret follow it: a rotation or a revocation reaches
	// this container within secret.RefreshInterval.
	if cfg.HookKeySecretARN != "" {
		if h.Verifier, err = app.RotatingHookKeys(awsCfg, cfg, logger); err != nil {
			fatal(err)
		}
	}
	api := apigw.New(h, cfg.PublicURL)
	api.MCP = app.MCP(cfg, h)
	api.OriginToken = cfg.EdgeToken
	handle := api.Handle
	// An inline first attempt's credentials, read once at the cold start
	// above, follow their secret as the worker's do: a rotated helpdesk
	// token reaches this container within secret.RefreshInterval, one
	// read each, never one per call.
	if f := app.FollowDestinationSecret(awsCfg, cfg, w, logger); f != nil {
		handle = func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			f.Refresh(ctx)
			return api.Handle(ctx, ev)
		}
	}
	lambda.Start(handle)
}

// fatal stops the cold start with the reason on stderr, which Lambda
// records as an init error.
func fatal(err error) {
	fmt.Fprintln(os.Stderr, "oncecall:", err)
	os.Exit(1)
}
