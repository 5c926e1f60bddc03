// Command deliver is oncecall's delivery worker on AWS Lambda: records of
// the table's DynamoDB stream (the first attempt of each ticket queued for
// a destination) and a scheduled event every minute (the sweep: due
// retries, and what the stream path left) in, attempts at the destination
// out. It only wires: settings, clients, the destination's credentials, the
// worker, lambda.Start.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/stream"
)

func main() {
	logger := lambdacontext.NewLogger()
	ctx := context.Background()
	cfg, err := config.Load(os.Getenv, config.Worker, app.FunctionNames())
	if err != nil {
		fatal(err)
	}
	awsCfg, err := app.AWSConfig(os.Getenv, cfg)
	if err != nil {
		fatal(err)
	}
	if cfg, err = app.ResolveDestinationSecret(ctx, awsCfg, cfg); err != nil {
		fatal(err)
	}
	w, err := app.Worker(cfg, app.Store(awsCfg, cfg, dynamo.WithLogger(logger)), logger)
	if err != nil {
		fatal(err)
	}
	handle := stream.New(w, logger).Handle
	// The destination's credentials follow their secret: a rotated
	// helpdesk token reaches this container within secret.RefreshInterval.
	if f := app.FollowDestinationSecret(awsCfg, cfg, w, logger); f != nil {
		inner := handle
		handle = func(ctx context.Context, raw json.RawMessage) (any, error) {
			f.Refresh(ctx)
			return inner(ctx, raw)
		}
	}
	lambda.Start(handle)
}

// fatal stops the cold start with the reason on stderr, which Lambda
// records as an init error.
func fatal(err error) {
	fmt.Fprintln(os.Stderr, "oncecall-deliver:", err)
	os.Exit(1)
}
