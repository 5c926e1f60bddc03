package app_test

import (
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
)

// TestSettleDelayFromTheEnvironment pins what DESTINATION_SETTLE_DELAY
// does, from the environment to the destination the worker uses: for a
// webhook it is the settle delay (unset or 0: none); for Zendesk a
// positive value replaces Zendesk's 5 minutes, shorter or longer, and
// unset or 0 keeps the 5 minutes (0 cannot mean none for Zendesk, since
// the template always passes 0 by default); for Request Tracker, whose
// search sees a ticket as soon as it is made, it is the settle delay as
// for a webhook. A person's not-created waits
// for the longer of three request timeouts and the delay.
func TestSettleDelayFromTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		dest, delay string
		want        time.Duration
		// resend is Policy.ResendWait with DESTINATION_TIMEOUT=10s.
		resend time.Duration
	}{
		{"webhook", "", 0, 30 * time.Second},
		{"webhook", "0", 0, 30 * time.Second},
		{"webhook", "10s", 10 * time.Second, 30 * time.Second},
		{"webhook", "2m", 2 * time.Minute, 2 * time.Minute},
		{"zendesk", "", 5 * time.Minute, 5 * time.Minute},
		{"zendesk", "0", 5 * time.Minute, 5 * time.Minute},
		{"zendesk", "30s", 30 * time.Second, 30 * time.Second},
		{"zendesk", "1s", time.Second, 30 * time.Second},
		{"zendesk", "1h", time.Hour, time.Hour},
		{"rt", "", 0, 30 * time.Second},
		{"rt", "0", 0, 30 * time.Second},
		{"rt", "2m", 2 * time.Minute, 2 * time.Minute},
	} {
		e := map[string]string{config.EnvTable: "t-1", config.EnvRegion: "eu-west-1", config.EnvDestination: c.dest,
			config.EnvDestinationToken: "a@example.com/token:t", config.EnvDestinationTimeout: "10s", config.EnvSettleDelay: c.delay}
		switch c.dest {
		case "webhook":
			e[config.EnvDestinationURL] = "https://helpdesk.example.com/tickets"
		case "rt":
			e[config.EnvDestinationURL], e[config.EnvDestinationToken] = "https://rt.example.com", `{"token": "1-23-abc"}`
		default:
			e[config.EnvZendeskSubdomain] = "acme"
		}
		cfg, err := config.Load(func(k string) string { return e[k] }, config.Worker, nil)
		if err != nil {
			t.Fatalf("%s %s=%q: %v", c.dest, config.EnvSettleDelay, c.delay, err)
		}
		d, err := app.Destination(cfg.Delivery)
		if err != nil {
			t.Fatal(err)
		}
		caps := d.Capabilities()
		if caps.SettleDelay != c.want {
			t.Errorf("%s %s=%q: settle delay %s, want %s", c.dest, config.EnvSettleDelay, c.delay, caps.SettleDelay, c.want)
		}
		if got := app.Policy(cfg.Delivery).ResendWait(caps); got != c.resend {
			t.Errorf("%s %s=%q: a person's not-created waits %s, want %s", c.dest, config.EnvSettleDelay, c.delay, got, c.resend)
		}
	}
}
