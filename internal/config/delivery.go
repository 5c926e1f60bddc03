package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Environment variables of delivery to a destination (a helpdesk).
const (
	EnvDestination        = "DESTINATION"
	EnvDestinationURL     = "DESTINATION_URL"
	EnvZendeskSubdomain   = "ZENDESK_SUBDOMAIN"
	EnvDestinationToken   = "DESTINATION_TOKEN"
	EnvDestinationSecret  = "DESTINATION_SECRET_ARN"
	EnvDedupWindow        = "DESTINATION_DEDUP_WINDOW"
	EnvLookup             = "DESTINATION_LOOKUP"
	EnvReplaysErrors      = "DESTINATION_REPLAYS_ERRORS"
	EnvSettleDelay        = "DESTINATION_SETTLE_DELAY"
	EnvRequestHorizon     = "DESTINATION_REQUEST_HORIZON"
	EnvDestinationTimeout = "DESTINATION_TIMEOUT"
	EnvMaxAttempts        = "DESTINATION_MAX_ATTEMPTS"
	EnvMaxAge             = "DESTINATION_MAX_AGE"
	EnvInlineTimeout      = "DELIVERY_INLINE_TIMEOUT"
	EnvSweepInterval      = "DELIVERY_SWEEP_INTERVAL"
	EnvZendeskTenantField = "ZENDESK_TENANT_FIELD"
	EnvZendeskUserField   = "ZENDESK_REQUESTER_FIELD"
	EnvZendeskRequester   = "ZENDESK_REQUESTER_ID"
	EnvRTQueue            = "RT_QUEUE"
)

// Destination kinds.
const (
	DestinationWebhook = "webhook"
	DestinationZendesk = "zendesk"
	DestinationRT      = "rt"
)

// destinationKinds names the destinations in messages.
const destinationKinds = DestinationWebhook + ", " + DestinationZendesk + " or " + DestinationRT

// Bounds of the delivery settings.
const (
	MaxDedupWindow = 7 * 24 * time.Hour
	MaxSettleDelay = time.Hour
	// MaxRequestHorizon bounds DESTINATION_REQUEST_HORIZON: a delivery
	// confirmed that much later is still well inside DESTINATION_MAX_AGE's
	// least (MinDestMaxAge aside) and SettleHorizon.
	MaxRequestHorizon = time.Hour
	MinDestTimeout    = time.Second
	MaxDestTimeout    = time.Minute
	MaxDestAttempts   = 100
	MinDestMaxAge     = time.Minute
	MaxDestMaxAge     = 30 * 24 * time.Hour
	MaxInlineTimeout  = 5 * time.Second
	MinSweepInterval  = 100 * time.Millisecond
	MaxSweepInterval  = time.Minute
	// MaxRTQueue bounds RT_QUEUE, in characters, as RT bounds a queue's
	// name.
	MaxRTQueue = 200
)

// Delivery is where tickets are delivered and how. A zero Destination
// means none: tickets stay in oncecall's table only. Zero durations and
// counts mean the delivery package's defaults.
type Delivery struct {
	Destination string
	// URL is the webhook's POST URL, or Zendesk's or Request Tracker's
	// base URL.
	URL string
	// Token holds the credentials in local runs; SecretARN names the
	// Secrets Manager secret that holds them on AWS.
	Token     string
	SecretARN string
	// DedupWindow, Lookup, ReplaysErrors and SettleDelay declare the
	// webhook's capabilities; Zendesk's and Request Tracker's are fixed by
	// their adapters (SettleDelay aside).
	DedupWindow   time.Duration
	Lookup        bool
	ReplaysErrors bool
	SettleDelay   time.Duration
	// RequestHorizon is how long after its client gave up a create may
	// still reach the destination (delivery.Capabilities.RequestHorizon);
	// zero for delivery.DefaultRequestHorizon.
	RequestHorizon time.Duration
	Timeout        time.Duration
	MaxAttempts    int
	MaxAge         time.Duration
	// Inline bounds a first attempt made by the callback itself; zero
	// leaves every attempt to the worker.
	Inline time.Duration
	// SweepInterval is how often a local run's worker sweeps.
	SweepInterval time.Duration
	// AllowHTTP accepts plain http to URL's host though it is not
	// loopback: Load sets it only for DockerHost in a local run (Local),
	// the helpdesk on the host as a `sam local invoke` container sees it.
	AllowHTTP bool
	// Zendesk custom field ids for the tenant and the requester, and the
	// Zendesk user made the requester; zero for none.
	ZendeskTenantField, ZendeskRequesterField, ZendeskRequesterID int64
	// RTQueue is the Request Tracker queue tickets are created in; empty
	// for the adapter's default (rt.DefaultQueue).
	RTQueue string
}

// deliverySettings are every variable of delivery but DESTINATION itself.
var deliverySettings = []string{
	EnvDestinationURL, EnvZendeskSubdomain, EnvDestinationToken, EnvDestinationSecret, EnvDedupWindow, EnvLookup,
	EnvReplaysErrors, EnvSettleDelay, EnvRequestHorizon, EnvDestinationTimeout, EnvMaxAttempts, EnvMaxAge, EnvInlineTimeout, EnvSweepInterval,
	EnvZendeskTenantField, EnvZendeskUserField, EnvZendeskRequester, EnvRTQueue,
}

// loadDelivery reads the delivery settings into c.Delivery, reporting each
// problem through bad.
func loadDelivery(getenv func(string) string, c *Config, bad func(name, format string, args ...any)) {
	d := &c.Delivery
	if v := getenv(EnvDestination); v != "" {
		d.Destination = v
	}
	switch d.Destination {
	case "":
		if c.DeliveryOnly {
			bad(EnvDestination, "is required by the delivery worker: %s", destinationKinds)
			return
		}
		for _, name := range deliverySettings {
			if getenv(name) != "" {
				bad(name, "is set but %s is not: set %s=%s to deliver tickets to a helpdesk", EnvDestination, EnvDestination, destinationKinds)
				return
			}
		}
		return
	case DestinationWebhook, DestinationZendesk, DestinationRT:
	default:
		bad(EnvDestination, "%q must be %s (or unset: tickets stay in oncecall's table)", d.Destination, destinationKinds)
		return
	}
	if v := getenv(EnvDestinationURL); v != "" {
		if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
			bad(EnvDestinationURL, "must be an https:// URL")
		}
		d.URL = v
		if u, err := url.Parse(v); err != nil {
			bad(EnvDestinationURL, "is not a URL")
		} else {
			credentialFree(u, v, bad)
			if strings.HasPrefix(v, "http://") {
				d.AllowHTTP = plainHTTP(u, c.Local, bad)
			}
		}
	}
	if d.Destination != DestinationRT && getenv(EnvRTQueue) != "" {
		bad(EnvRTQueue, "applies to %s=%s only", EnvDestination, DestinationRT)
	}
	switch d.Destination {
	case DestinationZendesk:
		loadZendesk(getenv, d, bad)
	case DestinationRT:
		loadRT(getenv, c.QueueOnly, d, bad)
	default:
		for _, name := range []string{EnvZendeskSubdomain, EnvZendeskTenantField, EnvZendeskUserField, EnvZendeskRequester} {
			if getenv(name) != "" {
				bad(name, "applies to %s=%s only", EnvDestination, DestinationZendesk)
			}
		}
		// The callback on Lambda only queues tickets, and is not given
		// the URL unless it makes inline attempts (checked below).
		if d.URL == "" && !c.QueueOnly {
			bad(EnvDestinationURL, "is required with %s=%s: the URL tickets are POSTed to", EnvDestination, DestinationWebhook)
		}
		d.DedupWindow = duration(getenv, EnvDedupWindow, 0, MaxDedupWindow, d.DedupWindow, bad,
			"(0: the webhook does not deduplicate by Idempotency-Key)")
		if v := getenv(EnvLookup); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad(EnvLookup, "%q must be true or false", v)
			}
			d.Lookup = b
		}
		if v := getenv(EnvReplaysErrors); v != "" {
			b, err := strconv.ParseBool(v)
			switch {
			case err != nil:
				bad(EnvReplaysErrors, "%q must be true or false", v)
			case b && d.DedupWindow == 0:
				bad(EnvReplaysErrors, "is true but %s is 0: a webhook that replays its answers per key remembers keys", EnvDedupWindow)
			}
			d.ReplaysErrors = b
		}
	}
	if v := getenv(EnvDestinationToken); v != "" {
		d.Token = v
	}
	if v := getenv(EnvDestinationSecret); v != "" {
		if !strings.HasPrefix(v, "arn:") {
			bad(EnvDestinationSecret, "must be a Secrets Manager secret ARN")
		}
		if getenv(EnvDestinationToken) != "" {
			bad(EnvDestinationToken, "is set together with %s: set one (on AWS the secret holds the credentials)", EnvDestinationSecret)
		}
		d.SecretARN, d.Token = v, ""
	}
	d.SettleDelay = duration(getenv, EnvSettleDelay, 0, MaxSettleDelay, d.SettleDelay, bad, "")
	d.RequestHorizon = duration(getenv, EnvRequestHorizon, 0, MaxRequestHorizon, d.RequestHorizon, bad, "(0: the default)")
	d.Timeout = duration(getenv, EnvDestinationTimeout, MinDestTimeout, MaxDestTimeout, d.Timeout, bad, "")
	d.MaxAge = duration(getenv, EnvMaxAge, MinDestMaxAge, MaxDestMaxAge, d.MaxAge, bad, "")
	d.Inline = duration(getenv, EnvInlineTimeout, 0, MaxInlineTimeout, d.Inline, bad, "(0: off)")
	d.SweepInterval = duration(getenv, EnvSweepInterval, MinSweepInterval, MaxSweepInterval, d.SweepInterval, bad, "")
	if c.QueueOnly && (d.Destination == DestinationWebhook || d.Destination == DestinationRT) && d.URL == "" && d.Inline > 0 {
		bad(EnvDestinationURL, "is required with %s: inline first attempts POST tickets to it", EnvInlineTimeout)
	}
	if v := getenv(EnvMaxAttempts); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxDestAttempts {
			bad(EnvMaxAttempts, "%q must be an integer from 1 to %d", v, MaxDestAttempts)
		} else {
			d.MaxAttempts = n
		}
	}
}

// loadRT reads Request Tracker's settings: its base URL (required where
// this process calls it) and queue; its capabilities are the adapter's.
func loadRT(getenv func(string) string, queueOnly bool, d *Delivery, bad func(name, format string, args ...any)) {
	for _, name := range []string{EnvDedupWindow, EnvLookup, EnvReplaysErrors, EnvZendeskSubdomain, EnvZendeskTenantField, EnvZendeskUserField, EnvZendeskRequester} {
		if getenv(name) != "" {
			bad(name, "cannot be set for %s: Request Tracker's adapter declares what RT does (it cannot deduplicate, and it is looked up by the key's custom field)", DestinationRT)
		}
	}
	if d.URL == "" && !queueOnly {
		bad(EnvDestinationURL, "is required with %s=%s: Request Tracker's base URL, such as https://rt.example.com", EnvDestination, DestinationRT)
	}
	if v := getenv(EnvRTQueue); v != "" {
		if utf8.RuneCountInString(v) > MaxRTQueue || !utf8.ValidString(v) || v[0] == ' ' || v[len(v)-1] == ' ' ||
			strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			bad(EnvRTQueue, "must be a queue's name or id: at most %d characters, no control characters or spaces around it", MaxRTQueue)
		}
		d.RTQueue = v
	}
}

func loadZendesk(getenv func(string) string, d *Delivery, bad func(name, format string, args ...any)) {
	for _, name := range []string{EnvDedupWindow, EnvLookup, EnvReplaysErrors} {
		if getenv(name) != "" {
			bad(name, "cannot be set for %s: Zendesk's adapter declares what Zendesk does (it deduplicates by Idempotency-Key and can be looked up)", DestinationZendesk)
		}
	}
	sub := getenv(EnvZendeskSubdomain)
	switch {
	case sub != "" && d.URL != "":
		bad(EnvZendeskSubdomain, "is set together with %s: set one", EnvDestinationURL)
	case sub != "":
		d.URL = "https://" + sub + ".zendesk.com"
		for _, r := range sub {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				bad(EnvZendeskSubdomain, "%q must be lower-case letters, digits and hyphens", sub)
				break
			}
		}
	case d.URL == "":
		bad(EnvZendeskSubdomain, "is required with %s=%s (or %s for another base URL)", EnvDestination, DestinationZendesk, EnvDestinationURL)
	}
	for name, into := range map[string]*int64{EnvZendeskTenantField: &d.ZendeskTenantField, EnvZendeskUserField: &d.ZendeskRequesterField, EnvZendeskRequester: &d.ZendeskRequesterID} {
		if v := getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				bad(name, "%q must be a Zendesk id (a positive integer)", v)
			}
			*into = n
		}
	}
}

// DockerHost is this machine as a container of `sam local invoke` sees it.
const DockerHost = "host.docker.internal"

// credentialFree refuses a DESTINATION_URL that could carry a credential:
// a user name or password, a query string or a fragment. The URL sits in
// the functions' environment, which Lambda shows to whoever may read their
// configuration; a credential belongs in the destination secret. The
// error never quotes the URL.
func credentialFree(u *url.URL, raw string, bad func(name, format string, args ...any)) {
	const fix = "put a credential in the destination secret (its token, sent as Authorization), never in the URL, which the function's configuration shows to whoever may read it"
	switch {
	case u.User != nil:
		bad(EnvDestinationURL, "carries a user name or password: %s", fix)
	case u.RawQuery != "" || u.ForceQuery:
		bad(EnvDestinationURL, "carries a query string: %s; oncecall adds its own query to look tickets up", fix)
	case strings.Contains(raw, "#"): // u.Fragment is empty for a bare "#"
		bad(EnvDestinationURL, "carries a fragment: remove it; %s", fix)
	}
}

// plainHTTP checks a plain http DESTINATION_URL, u: accepted to a loopback
// host, and to DockerHost in a local run (local: DYNAMODB_ENDPOINT is a
// local store, or the local server), which is what it returns; refused
// otherwise, as the adapters would refuse it at start-up. The error never
// quotes the URL, which may carry a token.
func plainHTTP(u *url.URL, local bool, bad func(name, format string, args ...any)) bool {
	host := u.Hostname()
	switch {
	case loopbackHost(host):
		return false // the adapters accept loopback themselves
	case host == DockerHost && local:
		return true
	}
	bad(EnvDestinationURL, "plain http is accepted only to a loopback host, or to %s when %s is a local store (sam local invoke); use https",
		DockerHost, EnvEndpoint)
	return false
}

// duration reads the duration variable name within [lo, hi]; def when unset.
func duration(getenv func(string) string, name string, lo, hi, def time.Duration, bad func(name, format string, args ...any), note string) time.Duration {
	v := getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		msg := fmt.Sprintf("%q must be a duration from %s to %s", v, lo, hi)
		if note != "" {
			msg += " " + note
		}
		bad(name, "%s", msg)
		return def
	}
	return d
}
