// Package app assembles oncecall from a validated configuration: the
// callback handler, and the delivery worker with its destination. The
// Lambdas (functions/callback, functions/deliver) and the local server
// (cmd/oncecall) all use it, so they can never be wired differently.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/secret"
)

// FunctionNames names the functions the handler serves, in listing order:
// the ones a KEY_POLICY may name (config.Load takes them).
func FunctionNames() []string {
	names := make([]string, len(callback.Tools))
	for i, t := range callback.Tools {
		names[i] = t.Name()
	}
	return names
}

// Store opens the DynamoDB store that cfg names, with opts (such as
// dynamo.WithLogger).
func Store(awsCfg aws.Config, cfg config.Config, opts ...dynamo.Option) *dynamo.Store {
	return dynamo.New(dynamodb.NewFromConfig(awsCfg, dynamo.Options(cfg.Endpoint)), cfg.Table, opts...)
}

// ServerOptions are what a main knows beyond its configuration.
type ServerOptions struct {
	// Outbox, when not nil, queues every new ticket for delivery (see
	// Outbox).
	Outbox *delivery.Outbox
	// Verifier checks each call's nonce; nil checks it against cfg's hook
	// keys as they are (RotatingHookKeys follows a secret instead).
	Verifier callback.Authenticator
	// Local, LoopbackHost and Outcome are httpapi.Options' (the local
	// server's refusals, the outcome read on the same router).
	Local, LoopbackHost bool
	Outcome             http.Handler
}

// Server assembles the server both mains serve, the Lambda function
// (functions/callback) and the local server (cmd/oncecall): the callback
// handler for cfg over store, its MCP door and its routes, each given what
// it needs at construction.
func Server(cfg config.Config, store *dynamo.Store, logger *slog.Logger, o ServerOptions) (*httpapi.Server, error) {
	h, err := handler(cfg, store, logger, o)
	if err != nil {
		return nil, err
	}
	return httpapi.New(h, httpapi.Options{
		PublicURL:   cfg.PublicURL,
		MCP:         MCPOptions(cfg),
		OriginToken: cfg.EdgeToken,
		Local:       o.Local, LoopbackHost: o.LoopbackHost,
		Outcome: o.Outcome,
	}), nil
}

// Handler builds the callback handler for cfg over store, checking nonces
// against cfg's hook keys, which must be set by now (from the environment
// or the secret). outbox, when not nil, queues every new ticket for
// delivery (see Outbox). Server builds its own; tests that drive the
// handler without the routes use this.
func Handler(cfg config.Config, store *dynamo.Store, logger *slog.Logger, outbox *delivery.Outbox) (*callback.Handler, error) {
	return handler(cfg, store, logger, ServerOptions{Outbox: outbox})
}

// handler is the callback handler of cfg over store, with o's outbox and
// verifier.
func handler(cfg config.Config, store *dynamo.Store, logger *slog.Logger, o ServerOptions) (*callback.Handler, error) {
	v := o.Verifier
	if v == nil {
		previous := cfg.PreviousHookKey
		if !cfg.PreviousHookKeyUntil.IsZero() && !time.Now().Before(cfg.PreviousHookKeyUntil) {
			previous = "" // it has ended
		}
		nv, err := nonce.NewVerifier(cfg.NonceMaxCost, cfg.HookKey, previous)
		if err != nil {
			return nil, err
		}
		v = nv
	}
	h := callback.NewHandler(v, store, logger)
	h.Policies = cfg.Policies
	h.Retention = cfg.Retention
	if o.Outbox != nil {
		h.Outbox = o.Outbox
	}
	if cfg.Metrics {
		// On Lambda, standard output goes to CloudWatch Logs, which turns
		// these lines into metrics.
		h.Metrics = metrics.New(os.Stdout, cfg.MetricsNamespace, cfg.FunctionName, callback.Outcomes)
	}
	return h, nil
}

// Environment variables of the Lambda runtime that AWSConfig reads.
const (
	envAccessKeyID     = "AWS_ACCESS_KEY_ID"
	envSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	envSessionToken    = "AWS_SESSION_TOKEN"
	// envEndpointURL, when set, sends every AWS client to one endpoint,
	// as the SDK's shared configuration does (sam local and the tests'
	// stand-in for AWS use it).
	envEndpointURL = "AWS_ENDPOINT_URL"
)

// AWSConfig is the AWS configuration of a function: static local
// credentials when the endpoint is a loopback address (the local store
// ignores them); otherwise the region cfg names and the credentials Lambda
// puts in the environment from the function's execution role
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which is
// where the SDK's default credential chain would find them on Lambda too,
// and AWS_ENDPOINT_URL as the SDK's shared configuration reads it.
// Reading them directly keeps the chain's shared-config, SSO and STS
// packages out of the bootstrap, and their initialization out of every
// cold start. Tools that need profiles use internal/app/profile.
func AWSConfig(getenv func(string) string, cfg config.Config) (aws.Config, error) {
	if IsLoopback(cfg.Endpoint) {
		return dynamo.LocalConfig(cfg.Region), nil
	}
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("AWS configuration: no region; set %s", config.EnvRegion)
	}
	id, key := getenv(envAccessKeyID), getenv(envSecretAccessKey)
	if id == "" || key == "" {
		return aws.Config{}, fmt.Errorf("AWS configuration: no credentials in the environment; set %s and %s (Lambda sets them from the function's role)", envAccessKeyID, envSecretAccessKey)
	}
	c := aws.Config{
		Region:      cfg.Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, key, getenv(envSessionToken))),
		HTTPClient:  dynamo.BuildableHTTPClient(),
	}
	if v := getenv(envEndpointURL); v != "" {
		c.BaseEndpoint = aws.String(v)
	}
	return c, nil
}

// AdminClient returns a DynamoDB client for table set-up.
func AdminClient(awsCfg aws.Config, cfg config.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(awsCfg, dynamo.Options(cfg.Endpoint))
}

// IsLoopback reports whether endpoint is a URL on this machine's loopback
// (localhost, 127.0.0.0/8, ::1): a local store that ignores credentials.
func IsLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || endpoint == "" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ResolveHookKey fills cfg's hook keys from Secrets Manager when cfg names a
// secret; that read is the only network call of a cold start. Without a
// secret, the keys are the ones the environment gave (local runs). A key
// in the secret unfit for purpose (nonce.CheckKey) is refused.
func ResolveHookKey(ctx context.Context, awsCfg aws.Config, cfg config.Config) (config.Config, error) {
	if cfg.HookKeySecretARN == "" {
		return cfg, nil
	}
	keys, err := secret.HookKeys(ctx, secretsmanager.NewFromConfig(awsCfg), cfg.HookKeySecretARN)
	if err != nil {
		return cfg, err
	}
	if err := keys.Check(cfg.Local); err != nil {
		return cfg, err
	}
	cfg.HookKey, cfg.PreviousHookKey, cfg.PreviousHookKeyUntil = keys.Current, keys.Previous, keys.PreviousUntil
	return cfg, nil
}

// MCPOptions are the MCP door's options for cfg: the bearer token it gives
// (resolved by ResolveMCPToken on AWS), open-world when tickets go on to a
// destination.
func MCPOptions(cfg config.Config) mcp.Options {
	return mcp.Options{Token: cfg.MCPToken, AllowedOrigins: cfg.MCPAllowedOrigins, OpenWorld: cfg.Delivery.Destination != ""}
}

// ResolveMCPToken fills cfg.MCPToken from Secrets Manager when cfg names a
// secret, at cold start like the hook key (ResolveSecret).
func ResolveMCPToken(ctx context.Context, awsCfg aws.Config, cfg config.Config) (config.Config, error) {
	v, err := ResolveSecret(ctx, awsCfg, cfg.MCPTokenSecretARN, "MCP token", config.CheckMCPToken)
	if err == nil && v != "" {
		cfg.MCPToken = v
	}
	return cfg, err
}

// ResolveEdgeToken reads the edge's origin token from its secret, when the
// configuration names one (ResolveSecret). Once per cold start: a new
// token comes with a new secret (the template replaces both), whose ARN
// reaches a new configuration and so new containers.
func ResolveEdgeToken(ctx context.Context, awsCfg aws.Config, cfg config.Config) (config.Config, error) {
	v, err := ResolveSecret(ctx, awsCfg, cfg.EdgeTokenSecretARN, "edge origin token", config.CheckEdgeToken)
	if err == nil && v != "" {
		cfg.EdgeToken = v
	}
	return cfg, err
}

// ResolveSecret reads the value of the secret arn names ("" when arn is
// empty: the setting was given as a value, config.Load checked it) and
// judges it, trimmed, with the check config.Load applies to a value; the
// value is never logged or quoted. what names the setting in errors.
func ResolveSecret(ctx context.Context, awsCfg aws.Config, arn, what string, check func(string) error) (string, error) {
	if arn == "" {
		return "", nil
	}
	v, err := secret.Value(ctx, secretsmanager.NewFromConfig(awsCfg), arn, what)
	if err != nil {
		return "", err
	}
	v = strings.TrimSpace(v)
	if err := check(v); err != nil {
		return "", fmt.Errorf("%s secret %w", what, err)
	}
	return v, nil
}

// RotatingHookKeys returns the callback's nonce check for a configuration
// whose keys come from the secret (ResolveHookKey read them at cold start):
// it reads the secret again every secret.RefreshInterval, keeping the last
// good keys when a read fails (logged at WARN, without the keys), and
// refuses the previous key after its end, so a rotation or a revocation
// reaches every warm container with no recycle.
func RotatingHookKeys(awsCfg aws.Config, cfg config.Config, logger *slog.Logger) (*secret.Rotating, error) {
	client := secretsmanager.NewFromConfig(awsCfg)
	read := func(ctx context.Context) (secret.Keys, error) {
		return secret.HookKeys(ctx, client, cfg.HookKeySecretARN)
	}
	onError := func(err error) {
		if logger != nil {
			logger.Warn("hook key secret", slog.String("error", err.Error()))
		}
	}
	keys := secret.Keys{Current: cfg.HookKey, Previous: cfg.PreviousHookKey, PreviousUntil: cfg.PreviousHookKeyUntil}
	return secret.NewRotating(keys, read, cfg.NonceMaxCost, nil, onError)
}
