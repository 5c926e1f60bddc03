// Command callback is the oncecall Lambda function: API Gateway HTTP API
// (payload 2.0) events in, callback and MCP answers out. It only wires:
// settings, clients, the hook key and MCP token, the handler and its
// outbox, lambda.Start.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/oncecall/oncecall/internal/apigw"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
)

func main() {
	logger := lambdacontext.NewLogger()
	api, refresh, err := router(context.Background(), os.Getenv, logger)
	if err != nil {
		fatal(err)
	}
	handle := apigw.New(api).Handle
	if refresh != nil {
		serve := handle
		handle = func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			refresh(ctx)
			return serve(ctx, ev)
		}
	}
	lambda.Start(handle)
}

// router wires the function from its environment: settings, clients, the
// hook key and MCP token, the handler and its outbox, and the one router
// both transports serve (cmd/oncecall serves the same httpapi.Server over
// net/http). refresh, when not nil, runs before each event.
func router(ctx context.Context, getenv func(string) string, logger *slog.Logger) (api *httpapi.Server, refresh func(context.Context), err error) {
	cfg, err := config.Load(getenv, config.Lambda, app.FunctionNames())
	if err != nil {
		return nil, nil, err
	}
	awsCfg, err := app.AWSConfig(getenv, cfg)
	if err != nil {
		return nil, nil, err
	}
	if cfg, err = app.ResolveHookKey(ctx, awsCfg, cfg); err != nil {
		return nil, nil, err
	}
	if cfg, err = app.ResolveMCPToken(ctx, awsCfg, cfg); err != nil {
		return nil, nil, err
	}
	if cfg, err = app.ResolveEdgeToken(ctx, awsCfg, cfg); err != nil {
		return nil, nil, err
	}
	store := app.Store(awsCfg, cfg, dynamo.WithLogger(logger))
	// With a destination, new tickets are queued for it; the worker
	// function delivers them. Only inline first attempts need the
	// destination's credentials here.
	var w *delivery.Worker
	if cfg.Delivery.Inline > 0 {
		if cfg, err = app.ResolveDestinationSecret(ctx, awsCfg, cfg); err != nil {
			return nil, nil, err
		}
		if w, err = app.Worker(cfg, store, logger); err != nil {
			return nil, nil, err
		}
	}
	o := app.ServerOptions{Outbox: app.Outbox(cfg, w)}
	// Keys from the secret follow it: a rotation or a revocation reaches
	// this container within secret.RefreshInterval.
	if cfg.HookKeySecretARN != "" {
		if o.Verifier, err = app.RotatingHookKeys(awsCfg, cfg, logger); err != nil {
			return nil, nil, err
		}
	}
	if api, err = app.Server(cfg, store, logger, o); err != nil {
		return nil, nil, err
	}
	// An inline first attempt's credentials, read once at the cold start
	// above, follow their secret as the worker's do: a rotated helpdesk
	// token reaches this container within secret.RefreshInterval, one
	// read each, never one per call.
	if f := app.FollowDestinationSecret(awsCfg, cfg, w, logger); f != nil {
		refresh = f.Refresh
	}
	return api, refresh, nil
}

// fatal stops the cold start with the reason on stderr, which Lambda
// records as an init error.
func fatal(err error) {
	fmt.Fprintln(os.Stderr, "oncecall:", err)
	os.Exit(1)
}
