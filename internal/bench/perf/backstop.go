package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/mapping"
	"github.com/oncecall/oncecall/internal/nonce"
)

// BackstopResult is how long a ticket whose stream record never reaches
// the worker waits for its first attempt: the sweep's backstop, on the
// template's schedule, with the real delivery.StreamGrace.
type BackstopResult struct {
	// Waits are, per ticket, from the time oncecall stamps on it to the
	// helpdesk receiving its create.
	Waits Durations
	// Every is the sweep's interval, from the template.
	Every time.Duration
}

const (
	backstopTable   = "oncecall-backstop"
	backstopTickets = 6
	backstopSpacing = 7 * time.Second
)

// Backstop creates backstopTickets tickets backstopSpacing apart through
// the callback, with a deliver handler that takes every stream batch and
// delivers nothing (records the mapping gave up on), so that only the
// sweep, on the template's schedule, can attempt them; it waits for each
// at the helpdesk.
func Backstop(ctx context.Context, st *Store) (BackstopResult, error) {
	var r BackstopResult
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{})
	if err != nil {
		return r, err
	}
	defer func() { _ = hd.Close() }()
	tpl, err := mapping.FindTemplate()
	if err != nil {
		return r, err
	}
	set, err := mapping.Read(tpl, "DeliverFunction")
	if err != nil {
		return r, err
	}
	r.Every = set.SweepEvery
	cfg := serviceConfig(st.URL, backstopTable)
	cfg.Delivery = config.Delivery{Destination: config.DestinationWebhook, URL: hd.WebhookURL()}
	svc, err := startService(ctx, cfg, backstopRunner)
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	c, err := DemoClient(nonce.MinCost)
	if err != nil {
		return r, err
	}
	defer c.Close()
	var ids []string
	for i := range backstopTickets {
		if i > 0 {
			time.Sleep(backstopSpacing)
		}
		id, err := c.Create(svc.URL, "user-a", fmt.Sprintf("backstop-%d-%d", time.Now().UnixNano(), i))
		if err != nil {
			return r, err
		}
		ids = append(ids, id)
	}
	deadline := time.Now().Add(delivery.StreamGrace + 2*r.Every + time.Minute)
	for _, id := range ids {
		for len(hd.TicketsByExternalID(id)) == 0 {
			if time.Now().After(deadline) {
				return r, fmt.Errorf("ticket %s not delivered by the sweep within %v of the run's last create", id, delivery.StreamGrace+2*r.Every+time.Minute)
			}
			select {
			case <-ctx.Done():
				return r, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		tk, _, err := svc.Store.ReadTicket(ctx, id)
		if err != nil || tk == nil {
			return r, fmt.Errorf("read ticket %s: %v", id, err)
		}
		r.Waits = append(r.Waits, hd.TicketsByExternalID(id)[0].ReceivedAt.Sub(tk.CreatedAt))
	}
	return r, nil
}

// backstopRunner wires the outbox as cmd/oncecall does, except that the
// handler the stream's records reach answers every batch as done and
// delivers nothing, as when the mapping gave up on them; the schedule
// invokes the real handler at the template's rate.
func backstopRunner(ctx context.Context, cfg config.Config, store *dynamo.Store, logger *slog.Logger) (*delivery.Outbox, func(), error) {
	return mappedRunner(ctx, cfg, store, logger, mappedOptions{wrap: dropRecords})
}

// dropRecords answers every stream batch as done without invoking h, and
// passes other events (the schedule's) to h.
func dropRecords(h mapping.Handler) mapping.Handler {
	return func(ctx context.Context, ev json.RawMessage) (any, error) {
		var probe struct {
			Records []json.RawMessage `json:"Records"`
		}
		if json.Unmarshal(ev, &probe) == nil && probe.Records != nil {
			return map[string]any{"batchItemFailures": []any{}}, nil
		}
		return h(ctx, ev)
	}
}

func backstopPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## The sweep's backstop: a first attempt the stream never made\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := Backstop(ctx, st)
	if err != nil {
		return err
	}
	bound := delivery.StreamGrace + r.Every
	fmt.Fprintf(w, "%d tickets created %v apart through the callback, as `make run DESTINATION=webhook` assembles it, except that the deliver handler takes every stream batch and delivers nothing (as when the event source mapping gave up on the records), so that only the sweep, on the template's schedule (every %v), can attempt them: each is listed for it at creation, due `delivery.StreamGrace` (%v) later. **Wait** is from the time oncecall stamps on the ticket to the helpdesk receiving its create; the bound is the grace plus one sweep interval.\n\n",
		backstopTickets, backstopSpacing, r.Every, delivery.StreamGrace)
	w.WriteString("| | min | p50 | max | bound |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(w, "| wait for the first attempt | %s | %s | %s | %s |\n\n", secs(r.Waits.Quantile(0)), secs(r.Waits.P50()), secs(r.Waits.Quantile(1)), secs(bound))
	target(w, "first attempt by the sweep when the stream never delivers, max wait ÷ (grace + one sweep interval)", ftoa(r.Waits.Quantile(1).Seconds()/bound.Seconds(), 3), "≤ 1.05", r.Waits.Quantile(1) <= bound+bound/20)
	return nil
}

func secs(d time.Duration) string { return ftoa(d.Seconds(), 1) + " s" }
