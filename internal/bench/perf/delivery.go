package perf

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/mapping"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/stream"
	"github.com/oncecall/oncecall/internal/ticket"
)

// DeliveryResult is the delivery latency of tickets created through the
// callback, against the helpdesk's own response time in the same run.
type DeliveryResult struct {
	// Helpdesk is the round trip of a create sent straight to the local
	// helpdesk through the webhook adapter: what a delivery cannot beat.
	Helpdesk Durations
	// Latency is, per ticket, from the time oncecall stamps on the ticket
	// (just before its transaction) to the helpdesk receiving the create:
	// commit, wake-up, lease and request together.
	Latency Durations
	// Created counts the callbacks; Delivered the tickets delivered.
	Created, Delivered int
	// Requests are the store requests of the run by operation: the
	// callbacks' transactions, the worker's lease and result updates, and
	// the local sweeps' index queries.
	Requests map[string]int64
	Sweeps   int64
}

// deliveryTable is the run's table.
const deliveryTable = "oncecall-delivery"

// Delivery creates n tickets one after another through the callback over
// HTTP, the table's stream bringing them to the deliver function's
// handler (the local event source mapping) and the local helpdesk, and
// measures each one's delivery latency.
func Delivery(ctx context.Context, st *Store, n int) (DeliveryResult, error) {
	var r DeliveryResult
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: delivery.Capabilities{DedupWindow: 2 * time.Hour}})
	if err != nil {
		return r, err
	}
	defer func() { _ = hd.Close() }()

	// The helpdesk alone, through the same adapter the worker uses.
	direct, err := webhook.New(hd.WebhookURL(), webhook.Options{Capabilities: delivery.Capabilities{DedupWindow: 2 * time.Hour}})
	if err != nil {
		return r, err
	}
	defer direct.CloseIdleConnections()
	for i := range n + 10 {
		t := ticket.Ticket{ID: ticket.NewID(), Tenant: "tenant-a", UserID: "user-a", Title: "baseline", Priority: "normal", CreatedAt: time.Now()}
		start := time.Now()
		res := direct.Create(ctx, delivery.Key("baseline", t.ID), t)
		if res.Outcome != delivery.Created {
			return r, fmt.Errorf("baseline create: %v %s", res.Outcome, res.Code)
		}
		if i >= 10 { // the first ten warm the connection
			r.Helpdesk = append(r.Helpdesk, time.Since(start))
		}
	}

	cfg := serviceConfig(st.URL, deliveryTable)
	cfg.Delivery = config.Delivery{Destination: config.DestinationWebhook, URL: hd.WebhookURL(), DedupWindow: 2 * time.Hour}
	svc, err := startService(ctx, cfg, localRunner)
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	c, err := DemoClient(nonce.MinCost)
	if err != nil {
		return r, err
	}
	defer c.Close()
	if err := warmIDKey(ctx, svc); err != nil {
		return r, err
	}
	before := st.Front.Counts()
	received := make(map[string]time.Time, n)
	for i := range n {
		id, err := c.Create(svc.URL, "user-a", fmt.Sprintf("delivery-%d-%d", time.Now().UnixNano(), i))
		if err != nil {
			return r, err
		}
		r.Created++
		got, err := waitAtHelpdesk(ctx, hd, id)
		if err != nil {
			return r, err
		}
		received[id] = got.ReceivedAt
		r.Delivered++
	}
	// Let the last result update land before counting, and read the
	// tickets' times only after.
	time.Sleep(100 * time.Millisecond)
	r.Requests = st.Front.Counts().Since(before, deliveryTable)
	for id, at := range received {
		tk, _, err := svc.Store.ReadTicket(ctx, id)
		if err != nil {
			return r, fmt.Errorf("read ticket %s: %w", id, err)
		}
		if tk == nil {
			return r, fmt.Errorf("ticket %s is not in the store", id)
		}
		r.Latency = append(r.Latency, at.Sub(tk.CreatedAt))
	}
	return r, nil
}

// waitAtHelpdesk waits until the helpdesk holds the ticket with external id.
func waitAtHelpdesk(ctx context.Context, hd *helpdesk.Server, id string) (helpdesk.Ticket, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := hd.TicketsByExternalID(id); len(got) > 0 {
			return got[0], nil
		}
		if time.Now().After(deadline) {
			return helpdesk.Ticket{}, fmt.Errorf("ticket %s not delivered within 10 s", id)
		}
		select {
		case <-ctx.Done():
			return helpdesk.Ticket{}, ctx.Err()
		case <-time.After(500 * time.Microsecond):
		}
	}
}

// localRunner wires the outbox as cmd/oncecall does with a destination:
// the callback queues each ticket, and the table's stream brings it to the
// deliver function's handler through the local event source mapping
// (internal/local/mapping, with the template's settings), polled every
// streamPoll instead of the mapping's default so that the figure is the
// delivery path's, not the poll's; the sweep runs every second.
func localRunner(ctx context.Context, cfg config.Config, store *dynamo.Store, logger *slog.Logger) (*delivery.Outbox, func(), error) {
	return mappedRunner(ctx, cfg, store, logger, mappedOptions{sweepEvery: time.Second, poll: streamPoll})
}

// mappedOptions are how mappedRunner departs from the template's mapping.
type mappedOptions struct {
	// sweepEvery and poll replace the template's schedule and the
	// mapping's default poll when positive.
	sweepEvery, poll time.Duration
	// wrap, when set, stands between the mapping and the handler.
	wrap func(mapping.Handler) mapping.Handler
}

// mappedRunner wires the outbox with the deliver function's handler behind
// the local event source mapping and schedule of template.yaml.
func mappedRunner(ctx context.Context, cfg config.Config, store *dynamo.Store, logger *slog.Logger, o mappedOptions) (*delivery.Outbox, func(), error) {
	w, err := app.Worker(cfg, store, logger)
	if err != nil {
		return nil, nil, err
	}
	var h mapping.Handler = stream.New(w, logger).Handle
	if o.wrap != nil {
		h = o.wrap(h)
	}
	awsCfg := dynamo.LocalConfig("us-east-1")
	rctx, cancel := context.WithCancel(ctx)
	_, _, wait, err := mapping.Start(rctx, mapping.Local{
		Function: "DeliverFunction", Table: cfg.Table, AWS: awsCfg, Endpoint: cfg.Endpoint,
		Admin: dynamodb.NewFromConfig(awsCfg, dynamo.Options(cfg.Endpoint)), Handler: h,
		SweepEvery: o.sweepEvery, PollInterval: o.poll, Logger: logger,
	})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return app.Outbox(cfg, w), func() {
		cancel()
		wait()
		if c, ok := w.Destination.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}, nil
}

// streamPoll is how often the delivery run's local mapping reads the
// stream.
const streamPoll = 5 * time.Millisecond

func deliveryPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## Delivery to a helpdesk\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := Delivery(ctx, st, o.DeliverySamples)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d `create_ticket` callbacks, one after another, to oncecall assembled as `make run DESTINATION=webhook` assembles it: each ticket is queued in its outbox, the table's stream brings it through the local event source mapping (`internal/local/mapping`, the template's settings, polled every 5 ms) to the deliver function's handler, which leases the delivery and sends it to the local helpdesk (`internal/local/helpdesk`, deduplicating) through the webhook adapter. **Delivery latency** runs from the time oncecall stamps on the ticket, just before its transaction, to the helpdesk receiving the create: the commit, the stream, the lease and the request. The **helpdesk's own response time** is the round trip of %d creates sent straight to it through the same adapter in the same run.\n\n",
		r.Created, len(r.Helpdesk))
	w.WriteString("| | p50 | p99 |\n|---|---:|---:|\n")
	fmt.Fprintf(w, "| helpdesk round trip, direct | %s | %s |\n", ms(r.Helpdesk.P50()), ms(r.Helpdesk.P99()))
	fmt.Fprintf(w, "| delivery latency (ticket stamped → helpdesk received) | %s | %s |\n\n", ms(r.Latency.P50()), ms(r.Latency.P99()))
	updates, txs := r.Requests["UpdateItem"], r.Requests["TransactWriteItems"]
	fmt.Fprintf(w, "Store requests of the run, counted at the store: %s per created call. The callback's own path is the user's record (a consistent GetItem) and the transaction (%s per call); the worker's are the lease, the mark that it is about to send and the result, **%s UpdateItem per delivered ticket**, the read of the leased ticket, a consistent GetItem (the worker's role may not ask an update for the item back: it may write only the delivery's own attributes), and the read of the ticket's user record before the create (does it still grant the call?); the rest are the sweeps, once a second here (each, whatever there is to do, three queries of the earlier attention index for entries to relist, a query of each of the %d queued shards of the attention index for due retries, and one of each shard of the three states for the backlog); the stream's own reads (`GetRecords` every 5 ms here) are not the table's and are not counted.\n\n",
		Describe(r.Requests, r.Created), ftoa(float64(txs)/float64(r.Created), 2), ftoa(float64(updates)/float64(r.Delivered), 2), dynamo.AttentionShards)
	slack := r.Latency.P50() - r.Helpdesk.P50()
	target(w, "delivery latency p50 − helpdesk round trip p50", ms(slack), "≤ 100 ms", slack <= 100*time.Millisecond)
	perDelivery := workerRequests(r.Requests, r.Created, r.Delivered)
	target(w, "store requests per successful delivery (lease, ticket read, user read, mark, result)", ftoa(perDelivery, 2), "≤ 5 (4 before the user's record is read before a create)", perDelivery <= 5)
	perCall := float64(txs+int64(r.Created)) / float64(r.Created) // the user read and the transaction
	target(w, "store requests of a created call with a destination (user read, transaction)", ftoa(perCall, 2), "2 (1 before)", perCall == 2)
	return nil
}

// workerRequests is the worker's store requests per delivered ticket in a
// run of created calls that made requests: its leases and results
// (UpdateItem) and its reads of the leased ticket (GetItem), the callback's
// read of the user's record on every call taken out.
func workerRequests(requests map[string]int64, created, delivered int) float64 {
	return float64(requests["UpdateItem"]+requests["GetItem"]-int64(created)) / float64(delivered)
}
