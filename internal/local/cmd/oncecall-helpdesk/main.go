// Command oncecall-helpdesk serves the local helpdesk (internal/local/helpdesk)
// standalone on 127.0.0.1:8025, for people trying oncecall's delivery by
// hand: the webhook contract at /tickets, Zendesk's ticket shape at
// /api/v2/tickets, and the control API at /_helpdesk/ (capabilities,
// faults, inspection, reset), which 127.0.0.1:8026 (-control-addr) serves
// alone too: a refuse fault closes 8025, and the control API stays
// reachable there to watch or end it.
//
// Flags set the capabilities at start; the control API changes them while
// it runs. Without flags it behaves as the helpdesk `make run
// DESTINATION=webhook` starts: it neither deduplicates by Idempotency-Key
// nor answers lookups (-dedup-window 2h -lookup behaves as Zendesk does). Credentials come from the environment, never from flags (which
// other users of the machine can read): HELPDESK_TOKEN is the webhook's
// bearer token, HELPDESK_ZENDESK_CREDENTIALS the Zendesk front's
// ("{email}/token:{api_token}" or an OAuth token, as DESTINATION_TOKEN).
// Without them the helpdesk checks no credentials.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/zendesk"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "oncecall-helpdesk:", err)
		os.Exit(2)
	}
}

// run serves until ctx ends. started, when not nil, is called with the
// running server (tests).
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, started func(*helpdesk.Server)) error {
	fs := flag.NewFlagSet("oncecall-helpdesk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", helpdesk.DefaultAddr, "address to listen on")
	ctlAddr := fs.String("control-addr", "", "address that serves the control API alone, open during a refuse fault (default: "+helpdesk.DefaultControlAddr+" with the default -addr, else a free port on -addr's host, logged as control_during_refuse; \"none\" for none)")
	// The defaults are those of the helpdesk `make run DESTINATION=webhook`
	// starts: the strictest webhook, which neither deduplicates nor
	// answers lookups. Zendesk does both: -dedup-window 2h -lookup.
	window := fs.Duration("dedup-window", 0, "how long an Idempotency-Key is remembered (0: never deduplicate; Zendesk: 2h)")
	lookup := fs.Bool("lookup", false, "answer lookups by external id (Zendesk does)")
	replays := fs.Bool("replays-errors", false, "answer a create whose key once got an error with that error again, while the key is remembered (Stripe's rule)")
	lag := fs.Duration("settle-delay", 0, "how long a new ticket stays invisible to lookups")
	quiet := fs.Bool("quiet", false, "do not log each request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := helpdesk.Options{
		Capabilities: delivery.Capabilities{DedupWindow: *window, Lookup: *lookup, SettleDelay: *lag, ReplaysErrors: *replays},
		Token:        getenv("HELPDESK_TOKEN"),
		ControlAddr:  *ctlAddr,
	}
	switch *ctlAddr {
	case "":
		o.ControlAddr = helpdesk.ControlAddrFor(*addr)
	case "none":
		o.ControlAddr = ""
	}
	if v := getenv("HELPDESK_ZENDESK_CREDENTIALS"); v != "" {
		c, err := zendesk.ParseCredentials(v)
		if err != nil {
			return fmt.Errorf("HELPDESK_ZENDESK_CREDENTIALS: %w", err)
		}
		o.ZendeskEmail, o.ZendeskAPIToken, o.ZendeskOAuthToken = c.Email, c.APIToken, c.OAuthToken
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if !*quiet {
		o.Log = log
	}
	s, err := helpdesk.Start(*addr, o)
	if err != nil {
		return err
	}
	log.Info("local helpdesk (in memory)", "webhook_url", s.WebhookURL(), "zendesk_url", s.URL(),
		"control", s.URL()+helpdesk.ControlPath+"/", "control_during_refuse", s.ControlURL()+helpdesk.ControlPath+"/", "dedup_window", o.Capabilities.DedupWindow.String(),
		"lookup", o.Capabilities.Lookup, "settle_delay", o.Capabilities.SettleDelay.String(), "replays_errors", o.Capabilities.ReplaysErrors,
		"webhook_auth", o.Token != "", "zendesk_auth", o.ZendeskAPIToken != "" || o.ZendeskOAuthToken != "")
	if started != nil {
		started(s)
	}
	<-ctx.Done()
	return s.Close()
}
