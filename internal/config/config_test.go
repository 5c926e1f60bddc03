package config_test

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/nonce"
)

const secretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:oncecall-hook-key-AbCdEf"

// functions are the names KEY_POLICY may give policies, as internal/app
// passes them.
var functions = []string{"create_ticket", "get_ticket"}

// env is a getenv over a map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// lambdaEnv is a complete, valid Lambda environment; tests change one
// variable at a time.
func lambdaEnv() map[string]string {
	return map[string]string{
		config.EnvTable:         "oncecall-Table-1ABC",
		config.EnvHookKeySecret: secretARN,
		config.EnvRegion:        "eu-west-1",
	}
}

func TestLoadAcceptsAFullLambdaEnvironment(t *testing.T) {
	e := lambdaEnv()
	e[config.EnvNonceMaxCost] = "12"
	e[config.EnvRetention] = "48h"
	e[config.EnvKeyPolicy] = "create_ticket=request"
	e[config.EnvLogLevel] = "DEBUG"
	e[config.EnvPublicURL] = "https://api.example.com"
	e[config.EnvMetrics] = "true"
	e[config.EnvMetricsNS] = "oncecall-prod"
	e[config.EnvFunctionName] = "oncecall-CallbackFunction-XYZ"
	e[config.EnvMCPTokenSecret] = secretARN
	c, err := config.Load(env(e), config.Lambda, functions)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		Table: "oncecall-Table-1ABC", Region: "eu-west-1", HookKeySecretARN: secretARN,
		NonceMaxCost: 12, Retention: 48 * time.Hour, LogLevel: slog.LevelDebug,
		PublicURL: "https://api.example.com", Metrics: true, MetricsNamespace: "oncecall-prod",
		FunctionName: "oncecall-CallbackFunction-XYZ", MCPTokenSecretARN: secretARN, QueueOnly: true,
	}
	if c.Policies.For("create_ticket") != idempotency.PolicyRequest || c.Policies.For("get_ticket") != idempotency.PolicyArguments {
		t.Errorf("policies = %v", c.Policies)
	}
	c.Policies = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
}

func TestLoadLambdaDefaults(t *testing.T) {
	c, err := config.Load(env(lambdaEnv()), config.Lambda, functions)
	if err != nil {
		t.Fatal(err)
	}
	if c.NonceMaxCost != nonce.DefaultMaxCost || c.Retention != 24*time.Hour ||
		c.LogLevel != slog.LevelInfo || c.Metrics || c.MetricsNamespace != "oncecall" || c.HookKey != "" || c.Endpoint != "" {
		t.Errorf("defaults = %+v", c)
	}
}

// TestLoadRefusesEveryBadSetting changes one variable of a valid
// environment at a time: each must stop the start with a message that names
// the variable and says what it accepts, and must not echo a hook key.
func TestLoadRefusesEveryBadSetting(t *testing.T) {
	longKey := strings.Repeat("k", nonce.MaxKeyBytes+1)
	cases := []struct {
		name string
		set  map[string]string
		drop []string
		// want are fragments of the message, the variable name first.
		want []string
	}{
		{"missing table", nil, []string{config.EnvTable}, []string{"TABLE_NAME", "is required"}},
		{"short table", map[string]string{config.EnvTable: "ab"}, nil, []string{"TABLE_NAME", "3-255"}},
		{"table with a slash", map[string]string{config.EnvTable: "a/b/c"}, nil, []string{"TABLE_NAME", "a-z A-Z 0-9 _ - ."}},
		{"long table", map[string]string{config.EnvTable: strings.Repeat("t", 256)}, nil, []string{"TABLE_NAME", "3-255"}},
		{"endpoint without scheme", map[string]string{config.EnvEndpoint: "localhost:8000"}, nil, []string{"DYNAMODB_ENDPOINT", "http:// or https://"}},
		{"secret not an ARN", map[string]string{config.EnvHookKeySecret: "oncecall-hook-key"}, nil, []string{"HOOK_KEY_SECRET_ARN", "secret ARN"}},
		{"MCP token too short", map[string]string{config.EnvMCPToken: "short-token"}, nil, []string{"MCP_TOKEN", "11 bytes", "16 to 1024"}},
		{"MCP token too long", map[string]string{config.EnvMCPToken: strings.Repeat("t", config.MaxMCPTokenBytes+1)}, nil, []string{"MCP_TOKEN", "1025 bytes"}},
		{"MCP token secret not an ARN", map[string]string{config.EnvMCPTokenSecret: "mcp-token"}, nil, []string{"MCP_TOKEN_SECRET_ARN", "secret ARN"}},
		{"MCP token beside its secret", map[string]string{config.EnvMCPToken: "typed-into-the-console", config.EnvMCPTokenSecret: secretARN}, nil, []string{"MCP_TOKEN", "set together with MCP_TOKEN_SECRET_ARN"}},
		{"no hook key at all", nil, []string{config.EnvHookKeySecret}, []string{"HOOK_KEY", "HOOK_KEY_SECRET_ARN"}},
		{"key beside the secret", map[string]string{config.EnvHookKey: "a-key-from-the-console"}, nil, []string{"HOOK_KEY", "together with HOOK_KEY_SECRET_ARN", "set one"}},
		{"previous key beside the secret", map[string]string{config.EnvHookKeyPrev: "an-old-key"}, nil, []string{"HOOK_KEY_PREVIOUS", "together with HOOK_KEY_SECRET_ARN"}},
		{"hook key too long", map[string]string{config.EnvHookKey: longKey}, []string{config.EnvHookKeySecret}, []string{"HOOK_KEY", "73 bytes", "at most 72"}},
		{"previous key too long", map[string]string{config.EnvHookKey: "short", config.EnvHookKeyPrev: longKey}, []string{config.EnvHookKeySecret}, []string{"HOOK_KEY_PREVIOUS", "at most 72"}},
		{"cost not a number", map[string]string{config.EnvNonceMaxCost: "ten"}, nil, []string{"NONCE_MAX_COST", "4 to 14"}},
		{"cost too low", map[string]string{config.EnvNonceMaxCost: "3"}, nil, []string{"NONCE_MAX_COST", "4 to 14"}},
		{"cost too high", map[string]string{config.EnvNonceMaxCost: "15"}, nil, []string{"NONCE_MAX_COST", "4 to 14"}},
		{"retention not a duration", map[string]string{config.EnvRetention: "1 day"}, nil, []string{"RETENTION", "duration", "24h"}},
		{"retention too short", map[string]string{config.EnvRetention: "30s"}, nil, []string{"RETENTION", "6m0s"}},
		{"retention inside the late-write window", map[string]string{config.EnvRetention: "5m"}, nil, []string{"RETENTION", "6m0s"}},
		{"retention too long", map[string]string{config.EnvRetention: "9000h"}, nil, []string{"RETENTION", "8760h0m0s"}},
		{"policy for an unknown function", map[string]string{config.EnvKeyPolicy: "delete_ticket=request"}, nil, []string{"KEY_POLICY", "unknown function", "create_ticket, get_ticket"}},
		{"unknown policy", map[string]string{config.EnvKeyPolicy: "create_ticket=strict"}, nil, []string{"KEY_POLICY", `"arguments" or "request"`}},
		{"policy without =", map[string]string{config.EnvKeyPolicy: "create_ticket"}, nil, []string{"KEY_POLICY", "function=policy"}},
		{"log level", map[string]string{config.EnvLogLevel: "LOUD"}, nil, []string{"LOG_LEVEL", "DEBUG, INFO, WARN or ERROR"}},
		{"public URL", map[string]string{config.EnvPublicURL: "api.example.com"}, nil, []string{"PUBLIC_URL", "http(s) URL"}},
		{"metrics flag", map[string]string{config.EnvMetrics: "yes please"}, nil, []string{"METRICS", "true or false"}},
		{"edge token too short", map[string]string{config.EnvEdgeToken: "short"}, nil, []string{"EDGE_ORIGIN_TOKEN", "at least 32 visible ASCII"}},
		{"edge token with a space", map[string]string{config.EnvEdgeToken: strings.Repeat("t", 32) + " x"}, nil, []string{"EDGE_ORIGIN_TOKEN", "at least 32 visible ASCII"}},
		{"edge token secret not an ARN", map[string]string{config.EnvEdgeTokenSecret: "edge-token"}, nil, []string{"EDGE_ORIGIN_SECRET_ARN", "secret ARN"}},
		{"edge token and its secret", map[string]string{config.EnvEdgeToken: strings.Repeat("t", 32), config.EnvEdgeTokenSecret: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:edge-AbCdEf"}, nil, []string{"EDGE_ORIGIN_TOKEN", "set one"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := lambdaEnv()
			for _, k := range tc.drop {
				delete(e, k)
			}
			for k, v := range tc.set {
				e[k] = v
			}
			c, err := config.Load(env(e), config.Lambda, functions)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", c)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "configuration: ") {
				t.Errorf("message %q does not say it is the configuration", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !strings.Contains(msg, tc.want[0]+": ") {
				t.Errorf("message %q does not lead with the variable %s", msg, tc.want[0])
			}
			for _, k := range []string{config.EnvHookKey, config.EnvHookKeyPrev, config.EnvMCPToken} {
				if v := e[k]; v != "" && strings.Contains(msg, v) {
					t.Errorf("message echoes the value of %s", k)
				}
			}
			if !reflect.DeepEqual(c, config.Config{}) {
				t.Errorf("a refused configuration was returned: %+v", c)
			}
		})
	}
}

func TestLoadReportsEveryProblemAtOnce(t *testing.T) {
	e := map[string]string{config.EnvNonceMaxCost: "99", config.EnvRetention: "forever", config.EnvMetrics: "maybe"}
	_, err := config.Load(env(e), config.Lambda, functions)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, name := range []string{"TABLE_NAME", "HOOK_KEY", "NONCE_MAX_COST", "RETENTION", "METRICS"} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s missing from %q", name, err)
		}
	}
}

func TestLoadLocalDefaultKeyGivesWayToASecret(t *testing.T) {
	base := config.Defaults
	base.HookKey = nonce.DemoKey
	c, err := config.Load(env(map[string]string{config.EnvHookKeySecret: secretARN}), base, functions)
	if err != nil {
		t.Fatal(err)
	}
	if c.HookKey != "" || c.HookKeySecretARN != secretARN {
		t.Errorf("HookKey=%q secret=%q: the secret must be the only source", c.HookKey, c.HookKeySecretARN)
	}
	c, err = config.Load(env(nil), base, functions)
	if err != nil || c.HookKey != nonce.DemoKey || c.Table != "oncecall" {
		t.Errorf("local defaults: %+v, %v", c, err)
	}
}

func TestLoadMCPToken(t *testing.T) {
	base := config.Defaults
	base.HookKey = "local-default-hook-key-0123456789abcdef"
	c, err := config.Load(env(map[string]string{config.EnvMCPToken: "local-token-0123456789"}), base, functions)
	if err != nil || c.MCPToken != "local-token-0123456789" || c.MCPTokenSecretARN != "" {
		t.Errorf("MCP_TOKEN: %q %q %v", c.MCPToken, c.MCPTokenSecretARN, err)
	}
	if c, err = config.Load(env(nil), base, functions); err != nil || c.MCPToken != "" || c.MCPTokenSecretARN != "" || c.MCPAllowedOrigins != nil {
		t.Errorf("no token and no origin by default: %q %q %q %v", c.MCPToken, c.MCPTokenSecretARN, c.MCPAllowedOrigins, err)
	}
	c, err = config.Load(env(map[string]string{config.EnvMCPAllowedOrigins: " https://app.example.com , http://localhost:6274"}), base, functions)
	if err != nil || len(c.MCPAllowedOrigins) != 2 || c.MCPAllowedOrigins[0] != "https://app.example.com" || c.MCPAllowedOrigins[1] != "http://localhost:6274" {
		t.Errorf("MCP_ALLOWED_ORIGINS: %q %v", c.MCPAllowedOrigins, err)
	}
}

// TestUnfitHookKeysChainToNonce: a hook key refused for what
// nonce.CheckKey found makes Load's error match nonce's sentinel with
// errors.Is, under the variable's name.
func TestUnfitHookKeysChainToNonce(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want error
	}{
		{map[string]string{config.EnvHookKey: "k"}, nonce.ErrKeyShort},
		{map[string]string{config.EnvHookKey: "   "}, nonce.ErrKeyBlank},
		{map[string]string{config.EnvHookKey: nonce.DemoKey, config.EnvHookKeyPrev: "old"}, nonce.ErrKeyShort},
	} {
		_, err := config.Load(env(c.env), config.Defaults, functions)
		if !errors.Is(err, c.want) {
			t.Errorf("Load with %d variables = %v, want it to match %v", len(c.env), err, c.want)
		}
	}
}

// TestHookKeysFitForPurpose: on Lambda the hook key comes from Secrets
// Manager only; a key from the environment is accepted only for a local
// run (the local server's base, or a local store), and every key must be
// at least nonce.MinKeyBytes, not blank, and not the public demo key
// (which only a local run may use). No message echoes the key.
func TestHookKeysFitForPurpose(t *testing.T) {
	strong := "k2Vq9xR7mN4pL8sT1wY6zA3bC5dE0fG7hJ"
	lambdaWithKey := func(k map[string]string, endpoint string) map[string]string {
		e := lambdaEnv()
		delete(e, config.EnvHookKeySecret)
		if endpoint != "" {
			e[config.EnvEndpoint] = endpoint
		}
		for n, v := range k {
			e[n] = v
		}
		return e
	}
	for _, c := range []struct {
		name string
		base config.Config
		env  map[string]string
		want string // "" accepted; else fragments of the message
	}{
		{"on Lambda, a strong key from the environment", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: strong}, ""),
			"HOOK_KEY: is refused on AWS Lambda: put the hook key in the Secrets Manager secret named by HOOK_KEY_SECRET_ARN"},
		{"on Lambda, a previous key from the environment", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: strong, config.EnvHookKeyPrev: strong + "x"}, "https://dynamodb.eu-west-1.amazonaws.com"),
			"HOOK_KEY_PREVIOUS: is refused on AWS Lambda"},
		{"make invoke: the demo key, a loopback store", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: nonce.DemoKey}, "http://127.0.0.1:8000"), ""},
		{"sam local invoke: the demo key, the host's store", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: nonce.DemoKey}, "http://host.docker.internal:8000"), ""},
		{"a local store, a one-letter key", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: "k"}, "http://localhost:8000"),
			"HOOK_KEY: hook key is shorter than 32 bytes"},
		{"a local store, a single space", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: " "}, "http://[::1]:8000"),
			"HOOK_KEY: hook key is empty or only white space"},
		{"a local store, 32 spaces and tabs", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: strings.Repeat(" \t", 16)}, "http://127.0.0.1:8000"),
			"HOOK_KEY: hook key is empty or only white space"},
		{"a local store, 31 bytes", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: strong[:31]}, "http://127.0.0.1:8000"),
			"HOOK_KEY: hook key is shorter than 32 bytes"},
		{"a local store, 32 bytes", config.Lambda, lambdaWithKey(map[string]string{config.EnvHookKey: strong[:32]}, "http://127.0.0.1:8000"), ""},
		{"the local server, the demo key", config.Defaults, map[string]string{config.EnvHookKey: nonce.DemoKey}, ""},
		{"the local server, a short previous key", config.Defaults, map[string]string{config.EnvHookKey: strong, config.EnvHookKeyPrev: "old"},
			"HOOK_KEY_PREVIOUS: hook key is shorter than 32 bytes"},
		{"the local server, a blank key", config.Defaults, map[string]string{config.EnvHookKey: "   "}, "HOOK_KEY: hook key is empty or only white space"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(env(c.env), c.base, functions)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted; want %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("message %q lacks %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), strong[:20]) {
				t.Errorf("message echoes the key: %v", err)
			}
		})
	}
}

// TestRetentionOutlivesALateWrite: the shortest retention is longer than
// a call's deadline plus the window in which AWS accepts a signed request,
// so that a create that lands late still meets a live claim.
func TestRetentionOutlivesALateWrite(t *testing.T) {
	if floor := config.LateWriteWindow + callback.Deadline; config.MinRetention <= floor {
		t.Fatalf("MinRetention %s is not above the late-write window plus the deadline, %s", config.MinRetention, floor)
	}
}
