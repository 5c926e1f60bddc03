package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/nonce"
)

// Environment variables.
const (
	EnvTable         = "TABLE_NAME"
	EnvEndpoint      = "DYNAMODB_ENDPOINT"
	EnvRegion        = "AWS_REGION"
	EnvHookKey       = "HOOK_KEY"
	EnvHookKeyPrev   = "HOOK_KEY_PREVIOUS"
	EnvHookKeySecret = "HOOK_KEY_SECRET_ARN"
	EnvNonceMaxCost  = "NONCE_MAX_COST"
	EnvRetention     = "RETENTION"
	EnvKeyPolicy     = "KEY_POLICY"
	EnvLogLevel      = "LOG_LEVEL"
	EnvPublicURL     = "PUBLIC_URL"
	// EnvMCPToken is the MCP door's bearer token (local runs);
	// EnvMCPTokenSecret names a Secrets Manager secret holding it (AWS).
	EnvMCPToken       = "MCP_TOKEN"
	EnvMCPTokenSecret = "MCP_TOKEN_SECRET_ARN"
	// EnvMCPAllowedOrigins lists the browser origins whose requests the
	// MCP door serves, comma-separated; none by default.
	EnvMCPAllowedOrigins = "MCP_ALLOWED_ORIGINS"
	EnvMetrics           = "METRICS"
	EnvMetricsNS         = "METRICS_NAMESPACE"
	// EnvEdgeToken, when set, is the value of EdgeHeader that the edge in
	// front (CloudFront, with AWS WAF) adds to every request: a request
	// without it did not come through the edge and is refused.
	// EnvEdgeTokenSecret names the Secrets Manager secret holding it, as
	// the template sets it: the token then never sits in the function's
	// environment, which whoever may read its configuration reads.
	EnvEdgeToken       = "EDGE_ORIGIN_TOKEN"
	EnvEdgeTokenSecret = "EDGE_ORIGIN_SECRET_ARN"
	// EnvFunctionName is set by Lambda; it names the metrics' dimension.
	EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
)

// Bounds of the settings.
const (
	// MinRetention is the shortest deduplication window: longer than a
	// call's deadline (callback.Deadline, 10 s) plus the late-write window
	// (LateWriteWindow), so that a create that lands late never writes a
	// claim that has already expired, and a retry after busy still meets
	// it. Whole minutes, as the template's Retention parameter takes them.
	MinRetention = 6 * time.Minute
	MaxRetention = 365 * 24 * time.Hour
	// LateWriteWindow is how long after a request was signed AWS may
	// still accept it: "within five minutes of the time stamp in the
	// request" (AWS Signature Version 4), the bound of a write held in the
	// network or in a frozen execution environment that signed it.
	LateWriteWindow = 5 * time.Minute
	MaxTableName    = 255
	// MinMCPTokenBytes keeps the MCP door's bearer token out of guessing
	// range; MaxMCPTokenBytes bounds it (an HTTP header).
	MinMCPTokenBytes = 16
	MaxMCPTokenBytes = 1024
	// MinEdgeToken is the shortest EDGE_ORIGIN_TOKEN accepted.
	MinEdgeToken = 32
)

// Config is oncecall's validated configuration.
type Config struct {
	Table    string
	Endpoint string
	Region   string
	// HookKey and PreviousHookKey are set from the environment when given
	// there; HookKeySecretARN names a Secrets Manager secret otherwise.
	HookKey          string
	PreviousHookKey  string
	HookKeySecretARN string
	// PreviousHookKeyUntil, from the secret, is when PreviousHookKey
	// stops being accepted; zero: until it is removed.
	PreviousHookKeyUntil time.Time
	NonceMaxCost         int
	Retention            time.Duration
	Policies             idempotency.Policies
	LogLevel             slog.Level
	PublicURL            string
	// MCPToken, when set, is the bearer token every POST /mcp must carry;
	// MCPTokenSecretARN names the secret holding it otherwise.
	MCPToken          string
	MCPTokenSecretARN string
	// MCPAllowedOrigins are the browser origins (scheme://host[:port])
	// whose requests POST /mcp serves; a request with any other Origin
	// header is refused.
	MCPAllowedOrigins []string
	// EdgeToken is EDGE_ORIGIN_TOKEN ("": no edge in front);
	// EdgeTokenSecretARN names the secret holding it otherwise (read at
	// cold start, app.ResolveEdgeToken).
	EdgeToken          string
	EdgeTokenSecretARN string
	// Metrics turns on CloudWatch Embedded Metric Format lines.
	Metrics          bool
	MetricsNamespace string
	// FunctionName is the Lambda function's name, the metrics' dimension.
	FunctionName string
	// Delivery is where tickets are delivered to, if anywhere.
	Delivery Delivery
	// DeliveryOnly is set in the base of the delivery worker, which
	// verifies no nonce (so needs no hook key) and exists only to deliver
	// (so needs a destination).
	DeliveryOnly bool
	// QueueOnly is set in the base of the callback on Lambda, which only
	// queues tickets for the worker: it needs to know where the
	// destination is (DESTINATION_URL, which may carry a token) only when
	// it makes inline first attempts.
	QueueOnly bool
	// ReadOnly is set in the base of the outcome read on Lambda, which
	// verifies no nonce (so needs no hook key) and only reads.
	ReadOnly bool
	// Local is set in the base of a local run (the local server and the
	// tools): the hook key may come from HOOK_KEY and may be the public
	// demo key. Load also sets it when DYNAMODB_ENDPOINT is a local store
	// (LocalEndpoint: make invoke, sam local invoke). Otherwise (on AWS
	// Lambda) the hook key comes from Secrets Manager only, and must be
	// fit for purpose (nonce.CheckKey).
	Local bool
}

// Defaults for a local run.
var Defaults = Config{
	Table:            "oncecall",
	NonceMaxCost:     nonce.DefaultMaxCost,
	Retention:        idempotency.DefaultRetention,
	LogLevel:         slog.LevelInfo,
	MetricsNamespace: "oncecall",
	Local:            true,
}

// Lambda holds the defaults on AWS Lambda: no table name and no hook key,
// so that a deployment missing either fails at cold start.
var Lambda = Config{
	NonceMaxCost:     nonce.DefaultMaxCost,
	Retention:        idempotency.DefaultRetention,
	LogLevel:         slog.LevelInfo,
	MetricsNamespace: "oncecall",
	QueueOnly:        true,
}

// Reader holds the defaults of the outcome read function on AWS Lambda:
// like Lambda, but with no hook key to require (its credential is the
// route's IAM authorization).
var Reader = Config{
	NonceMaxCost:     nonce.DefaultMaxCost,
	Retention:        idempotency.DefaultRetention,
	LogLevel:         slog.LevelInfo,
	MetricsNamespace: "oncecall",
	QueueOnly:        true,
	ReadOnly:         true,
}

// Worker holds the defaults of the delivery worker function on AWS Lambda:
// like Lambda, but with no hook key to require and a destination required.
var Worker = Config{
	NonceMaxCost:     nonce.DefaultMaxCost,
	Retention:        idempotency.DefaultRetention,
	LogLevel:         slog.LevelInfo,
	MetricsNamespace: "oncecall",
	DeliveryOnly:     true,
}

// Load reads the environment through getenv over the defaults in base.
// functions are the names KEY_POLICY may give a policy: the functions the
// handler serves (internal/app has them). Load reports every problem at
// once.
func Load(getenv func(string) string, base Config, functions []string) (Config, error) {
	c := base
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	if v := getenv(EnvTable); v != "" {
		c.Table = v
	}
	if c.Table == "" {
		bad(EnvTable, "is required: the DynamoDB table name")
	} else if len(c.Table) > MaxTableName || !validTableName(c.Table) {
		bad(EnvTable, "%q is not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ - .)", c.Table)
	}
	if v := getenv(EnvEndpoint); v != "" {
		if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
			bad(EnvEndpoint, "%q must be an http:// or https:// URL", v)
		}
		c.Endpoint = v
	}
	if v := getenv(EnvRegion); v != "" {
		c.Region = v
	}
	if v := getenv(EnvHookKey); v != "" {
		c.HookKey = v
	}
	if v := getenv(EnvHookKeyPrev); v != "" {
		c.PreviousHookKey = v
	}
	if v := getenv(EnvHookKeySecret); v != "" {
		if !strings.HasPrefix(v, "arn:") {
			bad(EnvHookKeySecret, "must be a Secrets Manager secret ARN")
		}
		// The secret holds both keys: a key in the environment beside it
		// would be ambiguous, so it is refused rather than silently
		// preferred, and a default key of a local run gives way.
		for _, name := range []string{EnvHookKey, EnvHookKeyPrev} {
			if getenv(name) != "" {
				bad(name, "is set together with %s: set one (the secret holds the current and previous keys)", EnvHookKeySecret)
			}
		}
		c.HookKeySecretARN = v
		c.HookKey, c.PreviousHookKey = "", ""
	}
	c.Local = c.Local || LocalEndpoint(c.Endpoint)
	for _, k := range []struct{ name, key string }{{EnvHookKey, c.HookKey}, {EnvHookKeyPrev, c.PreviousHookKey}} {
		switch {
		case k.key == "":
		case len(k.key) > nonce.MaxKeyBytes:
			bad(k.name, "is %d bytes; BCrypt uses at most %d", len(k.key), nonce.MaxKeyBytes)
		case !c.Local && getenv(k.name) != "":
			// A key in a function's environment is in its configuration,
			// readable by whoever may read that, and stays after a rotation.
			bad(k.name, "is refused on AWS Lambda: put the hook key in the Secrets Manager secret named by %s (%s is for local runs, whose %s is a local store)",
				EnvHookKeySecret, k.name, EnvEndpoint)
		default:
			if err := nonce.CheckKey(k.key, c.Local); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k.name, err))
			}
		}
	}
	if c.HookKey == "" && c.HookKeySecretARN == "" && !c.DeliveryOnly && !c.ReadOnly {
		bad(EnvHookKey, "no hook key: set %s (local) or %s (AWS)", EnvHookKey, EnvHookKeySecret)
	}
	if v := getenv(EnvNonceMaxCost); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < nonce.MinCost || n > nonce.HardMaxCost {
			bad(EnvNonceMaxCost, "%q must be an integer from %d to %d (AIVAX uses 9)", v, nonce.MinCost, nonce.HardMaxCost)
		} else {
			c.NonceMaxCost = n
		}
	}
	if v := getenv(EnvRetention); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < MinRetention || d > MaxRetention {
			bad(EnvRetention, "%q must be a duration from %s to %s, such as 24h: shorter, a create that reaches the store late (up to %s after it was signed) could find its claim expired and a retry could create a second ticket", v, MinRetention, MaxRetention, LateWriteWindow)
		} else {
			c.Retention = d
		}
	}
	if pol, err := idempotency.ParsePolicies(getenv(EnvKeyPolicy), functions); err != nil {
		bad(EnvKeyPolicy, "%v", err)
	} else {
		c.Policies = pol
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad(EnvLogLevel, "%q must be DEBUG, INFO, WARN or ERROR", v)
		}
	}
	if v := getenv(EnvPublicURL); v != "" {
		if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
			bad(EnvPublicURL, "%q must be an http(s) URL", v)
		}
		c.PublicURL = v
	}
	c.MCPToken, c.MCPTokenSecretARN = valueOrSecret(getenv, EnvMCPToken, EnvMCPTokenSecret, CheckMCPToken, bad)
	if v := getenv(EnvMCPAllowedOrigins); v != "" {
		for _, o := range strings.Split(v, ",") {
			o = strings.TrimSpace(o)
			if u, err := url.Parse(o); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
				bad(EnvMCPAllowedOrigins, "%q is not an origin: write scheme://host[:port], such as https://app.example.com, several separated by commas", o)
				continue
			}
			c.MCPAllowedOrigins = append(c.MCPAllowedOrigins, o)
		}
	}
	c.EdgeToken, c.EdgeTokenSecretARN = valueOrSecret(getenv, EnvEdgeToken, EnvEdgeTokenSecret, CheckEdgeToken, bad)
	if v := getenv(EnvMetrics); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(EnvMetrics, "%q must be true or false", v)
		}
		c.Metrics = b
	}
	if v := getenv(EnvMetricsNS); v != "" {
		c.MetricsNamespace = v
	}
	c.FunctionName = getenv(EnvFunctionName)
	loadDelivery(getenv, &c, bad)
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// LocalStoreAddr is where the local store listens when `make run` starts
// it: the store the local server and the operator's tool use unless told
// otherwise.
const LocalStoreAddr = "127.0.0.1:8000"

// LocalEndpoint reports whether endpoint is a store on this machine: a
// loopback host, localhost, or host.docker.internal (the host as
// `sam local invoke`'s container sees it).
func LocalEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || endpoint == "" {
		return false
	}
	host := u.Hostname()
	return host == DockerHost || loopbackHost(host)
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validTableName(s string) bool {
	if len(s) < 3 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}

// valueOrSecret reads a setting given either as its value (env, local
// runs) or as the ARN of the Secrets Manager secret that holds it (arnEnv,
// AWS), never both. check judges a value given here; a secret's value is
// judged by the same check when it is read (app.ResolveSecret).
func valueOrSecret(getenv func(string) string, env, arnEnv string, check func(string) error, bad func(name, format string, args ...any)) (value, arn string) {
	if value = getenv(env); value != "" {
		if err := check(value); err != nil {
			bad(env, "%v", err)
		}
	}
	if arn = getenv(arnEnv); arn != "" {
		if !strings.HasPrefix(arn, "arn:") {
			bad(arnEnv, "must be a Secrets Manager secret ARN")
		}
		if value != "" {
			bad(env, "is set together with %s: set one", arnEnv)
		}
	}
	return value, arn
}

// CheckMCPToken says what is wrong with an MCP bearer token, nil when
// nothing is: MinMCPTokenBytes to MaxMCPTokenBytes.
func CheckMCPToken(v string) error {
	if len(v) < MinMCPTokenBytes || len(v) > MaxMCPTokenBytes {
		return fmt.Errorf("is %d bytes; use %d to %d", len(v), MinMCPTokenBytes, MaxMCPTokenBytes)
	}
	return nil
}

// CheckEdgeToken says what is wrong with the edge's origin token, nil when
// nothing is: at least MinEdgeToken visible ASCII characters.
func CheckEdgeToken(v string) error {
	if len(v) < MinEdgeToken || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return fmt.Errorf("must be at least %d visible ASCII characters (the template generates it)", MinEdgeToken)
	}
	return nil
}
