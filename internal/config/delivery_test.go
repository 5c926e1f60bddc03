package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/config"
)

const destSecretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:oncecall-destination-AbCdEf"

func TestDeliveryIsOffByDefault(t *testing.T) {
	c, err := config.Load(env(lambdaEnv()), config.Lambda, functions)
	if err != nil {
		t.Fatal(err)
	}
	if c.Delivery != (config.Delivery{}) {
		t.Fatalf("Delivery = %+v without DESTINATION", c.Delivery)
	}
}

func TestDeliveryWebhook(t *testing.T) {
	e := lambdaEnv()
	e[config.EnvDestination] = "webhook"
	e[config.EnvDestinationURL] = "https://helpdesk.example.com/tickets"
	e[config.EnvDestinationSecret] = destSecretARN
	e[config.EnvDedupWindow] = "2h"
	e[config.EnvLookup] = "true"
	e[config.EnvReplaysErrors] = "true"
	e[config.EnvSettleDelay] = "30s"
	e[config.EnvDestinationTimeout] = "5s"
	e[config.EnvMaxAttempts] = "6"
	e[config.EnvMaxAge] = "12h"
	e[config.EnvInlineTimeout] = "2s"
	c, err := config.Load(env(e), config.Lambda, functions)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Delivery{
		Destination: "webhook", URL: "https://helpdesk.example.com/tickets", SecretARN: destSecretARN,
		DedupWindow: 2 * time.Hour, Lookup: true, ReplaysErrors: true, SettleDelay: 30 * time.Second, Timeout: 5 * time.Second,
		MaxAttempts: 6, MaxAge: 12 * time.Hour, Inline: 2 * time.Second,
	}
	if c.Delivery != want {
		t.Fatalf("Delivery =\n%+v\nwant\n%+v", c.Delivery, want)
	}
}

func TestDeliveryZendeskFromSubdomain(t *testing.T) {
	e := lambdaEnv()
	e[config.EnvDestination] = "zendesk"
	e[config.EnvZendeskSubdomain] = "acme-support"
	e[config.EnvZendeskTenantField] = "360001"
	c, err := config.Load(env(e), config.Lambda, functions)
	if err != nil {
		t.Fatal(err)
	}
	if c.Delivery.URL != "https://acme-support.zendesk.com" || c.Delivery.ZendeskTenantField != 360001 {
		t.Fatalf("Delivery = %+v", c.Delivery)
	}
}

func TestDeliveryRT(t *testing.T) {
	e := lambdaEnv()
	e[config.EnvDestination] = "rt"
	e[config.EnvDestinationURL] = "https://rt.example.com"
	e[config.EnvDestinationSecret] = destSecretARN
	e[config.EnvRTQueue] = "IT Support"
	e[config.EnvSettleDelay] = "2m"
	c, err := config.Load(env(e), config.Lambda, functions)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Delivery{Destination: "rt", URL: "https://rt.example.com", SecretARN: destSecretARN, RTQueue: "IT Support", SettleDelay: 2 * time.Minute}
	if c.Delivery != want {
		t.Fatalf("Delivery =\n%+v\nwant\n%+v", c.Delivery, want)
	}
	w := map[string]string{config.EnvTable: "t-1", config.EnvRegion: "eu-west-1", config.EnvDestination: "rt"}
	if _, err := config.Load(env(w), config.Worker, nil); err == nil || !strings.Contains(err.Error(), "DESTINATION_URL: is required with DESTINATION=rt") {
		t.Fatalf("the worker without RT's URL: %v", err)
	}
}

func TestDeliveryRefusals(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		says string
	}{
		{map[string]string{config.EnvDestinationURL: "https://x.test"}, "DESTINATION_URL: is set but DESTINATION is not"},
		{map[string]string{config.EnvDestination: "jira"}, `DESTINATION: "jira" must be webhook, zendesk or rt`},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvRTQueue: "General"}, "RT_QUEUE: applies to DESTINATION=rt only"},
		{map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.x.test", config.EnvLookup: "true"}, "DESTINATION_LOOKUP: cannot be set for rt"},
		{map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.x.test", config.EnvDedupWindow: "1h"}, "DESTINATION_DEDUP_WINDOW: cannot be set for rt"},
		{map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.x.test", config.EnvZendeskSubdomain: "a"}, "ZENDESK_SUBDOMAIN: cannot be set for rt"},
		{map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.x.test", config.EnvRTQueue: " General"}, "RT_QUEUE: must be a queue's name or id"},
		{map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.x.test", config.EnvRTQueue: "a\nb"}, "RT_QUEUE: must be a queue's name or id"},
		{map[string]string{config.EnvDestination: "rt", config.EnvInlineTimeout: "1s"}, "DESTINATION_URL: is required with DELIVERY_INLINE_TIMEOUT"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvInlineTimeout: "1s"}, "DESTINATION_URL: is required with DELIVERY_INLINE_TIMEOUT: inline first attempts POST tickets to it"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "ftp://x"}, "DESTINATION_URL: must be an https:// URL"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://bot:hunter2@x.test/tickets"}, "DESTINATION_URL: carries a user name or password"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test/tickets?token=hunter2"}, "DESTINATION_URL: carries a query string"},
		{map[string]string{config.EnvDestination: "rt", config.EnvDestinationURL: "https://rt.x.test/?"}, "DESTINATION_URL: carries a query string"},
		{map[string]string{config.EnvDestination: "zendesk", config.EnvDestinationURL: "https://a.test#hunter2"}, "DESTINATION_URL: carries a fragment"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvDedupWindow: "-1s"}, "DESTINATION_DEDUP_WINDOW: \"-1s\" must be a duration from 0s to 168h0m0s"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvLookup: "yes"}, `DESTINATION_LOOKUP: "yes" must be true or false`},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvMaxAttempts: "0"}, "DESTINATION_MAX_ATTEMPTS: \"0\" must be an integer from 1 to 100"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvInlineTimeout: "30s"}, "DELIVERY_INLINE_TIMEOUT: \"30s\" must be a duration from 0s to 5s"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvZendeskSubdomain: "a"}, "ZENDESK_SUBDOMAIN: applies to DESTINATION=zendesk only"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvDestinationToken: "t", config.EnvDestinationSecret: destSecretARN}, "DESTINATION_TOKEN: is set together with DESTINATION_SECRET_ARN"},
		{map[string]string{config.EnvDestination: "zendesk"}, "ZENDESK_SUBDOMAIN: is required with DESTINATION=zendesk"},
		{map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "Acme"}, `ZENDESK_SUBDOMAIN: "Acme" must be lower-case`},
		{map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "a", config.EnvLookup: "false"}, "DESTINATION_LOOKUP: cannot be set for zendesk"},
		{map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "a", config.EnvReplaysErrors: "true"}, "DESTINATION_REPLAYS_ERRORS: cannot be set for zendesk"},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvReplaysErrors: "yes"}, `DESTINATION_REPLAYS_ERRORS: "yes" must be true or false`},
		{map[string]string{config.EnvDestination: "webhook", config.EnvDestinationURL: "https://x.test", config.EnvReplaysErrors: "true"}, "DESTINATION_REPLAYS_ERRORS: is true but DESTINATION_DEDUP_WINDOW is 0"},
		{map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "a", config.EnvDestinationURL: "https://a.test"}, "ZENDESK_SUBDOMAIN: is set together with DESTINATION_URL"},
		{map[string]string{config.EnvDestination: "zendesk", config.EnvZendeskSubdomain: "a", config.EnvZendeskRequester: "x"}, `ZENDESK_REQUESTER_ID: "x" must be a Zendesk id`},
	} {
		e := lambdaEnv()
		for k, v := range c.set {
			e[k] = v
		}
		_, err := config.Load(env(e), config.Lambda, functions)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Load(%v) = %v, want it to say %q", c.set, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Load(%v) = %v: a refusal quotes what it refuses", c.set, err)
		}
	}
}

// TestTheWebhookURLOnlyWhereTicketsAreSent: a webhook URL may carry a
// token, so the callback on Lambda, which only queues tickets, needs it
// only for inline first attempts; the worker and a local run always do.
func TestTheWebhookURLOnlyWhereTicketsAreSent(t *testing.T) {
	e := lambdaEnv()
	e[config.EnvDestination] = "webhook"
	c, err := config.Load(env(e), config.Lambda, functions)
	if err != nil || c.Delivery.Destination != "webhook" || c.Delivery.URL != "" {
		t.Fatalf("the queueing callback without the URL: %+v, %v", c.Delivery, err)
	}
	w := map[string]string{config.EnvTable: "t-1", config.EnvRegion: "eu-west-1", config.EnvDestination: "webhook"}
	if _, err := config.Load(env(w), config.Worker, nil); err == nil || !strings.Contains(err.Error(), "DESTINATION_URL: is required with DESTINATION=webhook") {
		t.Fatalf("the worker without the URL: %v", err)
	}
	l := map[string]string{config.EnvDestination: "webhook", config.EnvHookKey: "local-demo-hook-key-0123456789"}
	if _, err := config.Load(env(l), config.Defaults, functions); err == nil || !strings.Contains(err.Error(), "DESTINATION_URL: is required with DESTINATION=webhook") {
		t.Fatalf("a local run without the URL: %v", err)
	}
}

func TestWorkerNeedsADestinationAndNoHookKey(t *testing.T) {
	e := map[string]string{config.EnvTable: "t-1", config.EnvRegion: "eu-west-1"}
	if _, err := config.Load(env(e), config.Worker, nil); err == nil || !strings.Contains(err.Error(), "DESTINATION: is required by the delivery worker") || strings.Contains(err.Error(), "HOOK_KEY") {
		t.Fatalf("worker without a destination: %v", err)
	}
	e[config.EnvDestination] = "webhook"
	e[config.EnvDestinationURL] = "https://helpdesk.example.com/tickets"
	if c, err := config.Load(env(e), config.Worker, nil); err != nil || c.Delivery.Destination != "webhook" {
		t.Fatalf("worker: %+v, %v", c.Delivery, err)
	}
}

// TestPlainHTTPDestination: plain http goes to a loopback host anywhere,
// to host.docker.internal only in a local run (DYNAMODB_ENDPOINT a local
// store, as sam local invoke's events/deliver/sam-env.json sets it), and
// nowhere else; the refusal never quotes the URL.
func TestPlainHTTPDestination(t *testing.T) {
	for _, c := range []struct {
		url, endpoint string
		ok, allow     bool
	}{
		{"http://127.0.0.1:8025/tickets", "", true, false},
		{"http://localhost:8025/tickets", "", true, false},
		{"http://[::1]:8025/tickets", "", true, false},
		{"http://host.docker.internal:8025/tickets", "http://host.docker.internal:8000", true, true},
		{"http://host.docker.internal:8025/tickets", "http://127.0.0.1:8000", true, true},
		{"http://host.docker.internal:8025/tickets", "http://localhost:8000", true, true},
		{"http://host.docker.internal:8025/tickets", "", false, false},
		{"http://host.docker.internal:8025/tickets", "https://dynamodb.eu-west-1.amazonaws.com", false, false},
		{"http://helpdesk.example.com/tickets?token=SECRET", "http://host.docker.internal:8000", false, false},
		{"http://10.0.0.5/tickets", "http://127.0.0.1:8000", false, false},
		{"https://host.docker.internal:8025/tickets", "", true, false},
	} {
		e := map[string]string{config.EnvTable: "t-1", config.EnvRegion: "eu-west-1",
			config.EnvDestination: "webhook", config.EnvDestinationURL: c.url, config.EnvEndpoint: c.endpoint}
		got, err := config.Load(env(e), config.Worker, nil)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s with %s=%q: %v", c.url, config.EnvEndpoint, c.endpoint, err)
		case c.ok && got.Delivery.AllowHTTP != c.allow:
			t.Errorf("%s with %s=%q: AllowHTTP %v, want %v", c.url, config.EnvEndpoint, c.endpoint, got.Delivery.AllowHTTP, c.allow)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "DESTINATION_URL: plain http is accepted only to a loopback host, or to host.docker.internal when DYNAMODB_ENDPOINT is a local store")):
			t.Errorf("%s with %s=%q: %v, want it refused", c.url, config.EnvEndpoint, c.endpoint, err)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("the refusal quotes the URL: %v", err)
		}
	}
}

// TestDeliverySettingsNeedADestination pins which variables are refused
// without DESTINATION: exactly these eighteen (there is no prefix rule: a
// name config does not read, such as DESTINATION_FOO, is ignored), each
// named in the refusal, on the callback and in a local run alike. The
// worker refuses to start without DESTINATION whatever else is set.
func TestDeliverySettingsNeedADestination(t *testing.T) {
	refused := []string{
		"DESTINATION_URL", "DESTINATION_TOKEN", "DESTINATION_SECRET_ARN", "DESTINATION_DEDUP_WINDOW", "DESTINATION_LOOKUP",
		"DESTINATION_REPLAYS_ERRORS", "DESTINATION_SETTLE_DELAY", "DESTINATION_REQUEST_HORIZON", "DESTINATION_TIMEOUT", "DESTINATION_MAX_ATTEMPTS", "DESTINATION_MAX_AGE",
		"DELIVERY_INLINE_TIMEOUT", "DELIVERY_SWEEP_INTERVAL",
		"ZENDESK_SUBDOMAIN", "ZENDESK_TENANT_FIELD", "ZENDESK_REQUESTER_FIELD", "ZENDESK_REQUESTER_ID", "RT_QUEUE",
	}
	local := map[string]string{config.EnvHookKey: "local-demo-hook-key-0123456789"}
	for _, name := range refused {
		for base, e := range map[string]map[string]string{"lambda": lambdaEnv(), "local": local} {
			e[name] = "1"
			b := config.Lambda
			if base == "local" {
				b = config.Defaults
			}
			_, err := config.Load(env(e), b, functions)
			if want := name + ": is set but DESTINATION is not"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s=1 without DESTINATION (%s): %v, want %q", name, base, err, want)
			}
			delete(e, name)
		}
	}
	for _, name := range []string{"DESTINATION_FOO", "DESTINATION_URLS", "ZENDESK_EMAIL", "ZENDESK_TOKEN", "DELIVERY_FOO", "HELPDESK_TOKEN"} {
		e := lambdaEnv()
		e[name] = "1"
		if _, err := config.Load(env(e), config.Lambda, functions); err != nil {
			t.Errorf("%s (not read) without DESTINATION: %v", name, err)
		}
	}
	e := map[string]string{config.EnvTable: "t-1", config.EnvRegion: "eu-west-1"}
	if _, err := config.Load(env(e), config.Worker, nil); err == nil || !strings.Contains(err.Error(), "DESTINATION: is required by the delivery worker") {
		t.Errorf("the worker without DESTINATION: %v", err)
	}
}
