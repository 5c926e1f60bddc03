// Package profile loads the AWS configuration for oncecall's tools and
// local server: the SDK's default chain (environment, shared config files
// and profiles, SSO, web identity, instance roles). The Lambda functions do
// not use it: they take their credentials from the environment Lambda sets
// (app.AWSConfig), which keeps this chain's packages out of a cold start.
package profile

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// AWSConfig loads the AWS configuration: static local credentials when the
// endpoint is a loopback address (the local store ignores them), the
// default credential chain otherwise.
func AWSConfig(ctx context.Context, cfg config.Config) (aws.Config, error) {
	if app.IsLoopback(cfg.Endpoint) {
		return dynamo.LocalConfig(cfg.Region), nil
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithHTTPClient(dynamo.BuildableHTTPClient())}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	c, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if c.Region == "" {
		return aws.Config{}, fmt.Errorf("AWS configuration: no region; set %s", config.EnvRegion)
	}
	return c, nil
}
