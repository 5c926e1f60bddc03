// Command callback is the oncecall Lambda function: API Gateway HTTP API
// (payload 2.0) events in, callback answers out. It only wires: settings,
// clients, the hook key, the handler, lambda.Start.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/oncecall/oncecall/internal/apigw"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
)

func main() {
	logger := lambdacontext.NewLogger()
	ctx := context.Background()
	cfg, err := config.Load(os.Getenv, config.Lambda, app.FunctionNames())
	if err != nil {
		fatal(err)
	}
	awsCfg, err := app.AWSConfig(ctx, cfg)
	if err != nil {
		fatal(err)
	}
	if cfg, err = app.ResolveHookKey(ctx, awsCfg, cfg); err != nil {
		fatal(err)
	}
	h, err := app.Handler(cfg, app.Store(awsCfg, cfg, dynamo.WithLogger(logger)), logger)
	if err != nil {
		fatal(err)
	}
	lambda.Start(apigw.New(h, cfg.PublicURL).Handle)
}

// fatal stops the cold start with the reason on stderr, which Lambda
// records as an init error.
func fatal(err error) {
	fmt.Fprintln(os.Stderr, "oncecall:", err)
	os.Exit(1)
}
