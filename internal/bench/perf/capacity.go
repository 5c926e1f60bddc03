package perf

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Tables of the capacity run, beside PeerTable.
const (
	capacityTable       = "oncecall-capacity"
	capacityDestTable   = "oncecall-capacity-dest"
	capacityInlineTable = "oncecall-capacity-inline"
)

// CapacityRow is what the store's answers reported for one kind of call,
// measured at the Front: the requests, the capacity they consumed and how
// many of them the Front had to make ask for it.
type CapacityRow struct {
	Side, Call string
	Calls      int
	Requests   map[string]int64
	Units      map[string]dynamo.Capacity
	// Added is how many of the requests the Front made ask for capacity.
	Added int64
}

// Total is the row's capacity over every operation.
func (r CapacityRow) Total() dynamo.Capacity { return Sum(r.Units) }

// CapacityResult is the capacity run: every row, in the report's order.
type CapacityResult struct {
	Rows []CapacityRow
	// Items is how many items the table that delivery recover scanned held.
	Items int
}

// capacityRun measures rows on one store.
type capacityRun struct {
	st   *Store
	rows []CapacityRow
	// warmed are the tickets of the warm-up calls, outside the rows.
	warmed []string
}

// measure runs f, which makes calls calls of one kind against table, and
// records what the Front saw of that table meanwhile. Nothing else may use
// the table while f runs.
func (c *capacityRun) measure(side, call, table string, calls int, f func() error) error {
	counts, units, added := c.st.Front.Counts(), c.st.Front.Capacity(), c.st.Front.Added()
	if err := f(); err != nil {
		return fmt.Errorf("%s, %s: %w", side, call, err)
	}
	c.rows = append(c.rows, CapacityRow{
		Side: side, Call: call, Calls: calls,
		Requests: c.st.Front.Counts().Since(counts, table),
		Units:    c.st.Front.Capacity().Since(units, table),
		Added:    Total(c.st.Front.Added().Since(added, table)),
	})
	return nil
}

// Capacity measures the read and write units oncecall's calls, delivery
// attempts and admin commands consume, and the Powertools peer's calls, on
// one store in one run, as the store's answers report them. The Front makes
// every request ask for INDEXES (oncecall's already do) and sums the
// answers. Each kind of call is made n times (n ≥ 2; the admin commands
// once), one after another; the retry rows use half of them.
func Capacity(ctx context.Context, o Options, n int) (CapacityResult, error) {
	return capacity(ctx, o, n, true)
}

// capacity is Capacity, with the peer's rows only when withPeer.
func capacity(ctx context.Context, o Options, n int, withPeer bool) (r CapacityResult, err error) {
	if n < 2 {
		return r, fmt.Errorf("the capacity run needs at least 2 calls of each kind, not %d", n)
	}
	st, err := StartStore()
	if err != nil {
		return r, err
	}
	defer func() { _ = st.Close() }()
	st.Front.AskCapacity = true
	run := &capacityRun{st: st}
	defer func() { r.Rows = run.rows }()

	client, err := DemoClient(nonce.MinCost)
	if err != nil {
		return r, err
	}
	defer client.Close()

	// oncecall without a destination.
	svc, err := StartService(ctx, st.URL, capacityTable)
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	if _, err := createdRows(run, client, svc.URL, "oncecall, no destination", capacityTable, "cap", n); err != nil {
		return r, err
	}

	// oncecall with a webhook destination, its worker driven by hand as
	// the stream would drive it.
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: delivery.Capabilities{DedupWindow: 2 * time.Hour}})
	if err != nil {
		return r, err
	}
	defer func() { _ = hd.Close() }()
	dsvc, worker, advance, err := destService(ctx, st.URL, capacityDestTable, hd.WebhookURL(), 0)
	if err != nil {
		return r, err
	}
	defer func() { _ = dsvc.Close() }()
	const dside = "oncecall, webhook destination"
	run.warmed = nil
	ids, err := createdRows(run, client, dsvc.URL, dside, capacityDestTable, "capd", n)
	if err != nil {
		return r, err
	}
	// The warm-up's ticket is delivered first, unmeasured, so that no
	// ticket but the rows' waits for the sweep (which takes up, after
	// delivery.StreamGrace, any the stream left).
	for _, id := range run.warmed {
		if _, err := worker.Handle(ctx, id); err != nil {
			return r, err
		}
	}
	if err := deliveryRows(ctx, run, worker, hd, client, dsvc.URL, ids, advance); err != nil {
		return r, err
	}
	if r.Items, err = adminRows(ctx, run, ids); err != nil {
		return r, err
	}

	// oncecall with the callback's own first attempt (DELIVERY_INLINE_TIMEOUT).
	isvc, iworker, _, err := destService(ctx, st.URL, capacityInlineTable, hd.WebhookURL(), 2*time.Second)
	if err != nil {
		return r, err
	}
	defer func() { _ = isvc.Close() }()
	if err := inlineRows(ctx, run, iworker, client, isvc.URL, n); err != nil {
		return r, err
	}

	// The Powertools peer.
	if withPeer {
		if err := peerRows(ctx, run, o, client, n); err != nil {
			return r, err
		}
	}
	return r, nil
}

// destService starts oncecall over storeURL's table with a webhook
// destination at hook, the callback's first attempts bounded by inline
// (none when zero). It returns the service, the worker its outbox uses
// (driven by hand, as the stream would drive it: nothing wakes it) and
// what moves the worker's clock ahead.
func destService(ctx context.Context, storeURL, table, hook string, inline time.Duration) (*Service, *delivery.Worker, func(time.Duration), error) {
	cfg := serviceConfig(storeURL, table)
	cfg.Delivery = config.Delivery{Destination: config.DestinationWebhook, URL: hook, DedupWindow: 2 * time.Hour, Inline: inline}
	var worker *delivery.Worker
	var mu sync.Mutex
	var ahead time.Duration
	svc, err := startService(ctx, cfg, func(_ context.Context, cfg config.Config, store *dynamo.Store, logger *slog.Logger) (*delivery.Outbox, func(), error) {
		w, err := app.Worker(cfg, store, logger)
		if err != nil {
			return nil, nil, err
		}
		w.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Now().Add(ahead)
		}
		worker = w
		// Nothing to wake: what no inline attempt settles stays queued for
		// the worker, as on AWS, where the stream brings it.
		return app.Outbox(cfg, w), func() {
			if c, ok := w.Destination.(interface{ CloseIdleConnections() }); ok {
				c.CloseIdleConnections()
			}
		}, nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return svc, worker, func(d time.Duration) {
		mu.Lock()
		ahead += d
		mu.Unlock()
	}, nil
}

// inlineRows measures created calls whose first attempt the callback makes
// itself, then the stream's record of each, which finds it delivered.
func inlineRows(ctx context.Context, run *capacityRun, w *delivery.Worker, c *Client, url string, n int) error {
	const side, table = "oncecall, webhook destination, inline first attempt", capacityInlineTable
	if _, err := c.Expect(url, CreateBody("user-a", "capi-warm"), "created"); err != nil {
		return err
	}
	ids := make([]string, 0, n)
	if err := run.measure(side, "create_ticket, created and delivered by the callback (TransactWriteItems, Lease, Finish)", table, n, func() error {
		for i := range n {
			id, err := c.Create(url, "user-a", fmt.Sprintf("capi-%d", i))
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	}); err != nil {
		return err
	}
	return run.measure(side, "delivery attempt, the stream's record after an inline delivery (refused lease)", table, len(ids), func() error {
		for _, id := range ids {
			rep, err := w.Handle(ctx, id)
			if err != nil {
				return err
			}
			if rep.Outcome != delivery.OutcomeSkipped {
				return fmt.Errorf("stream record of %s: %s, want %s (was it delivered inline?)", id, rep.Outcome, delivery.OutcomeSkipped)
			}
		}
		return nil
	})
}

// createdRows measures n created calls of user-a (after one that warms the
// connections), n replays of them and n get_ticket calls of their tickets,
// and returns the tickets' ids.
func createdRows(run *capacityRun, c *Client, url, side, table, prefix string, n int) ([]string, error) {
	warm, _, err := c.Post(url, CreateBody("user-a", prefix+"-warm"))
	if err != nil {
		return nil, err
	}
	if warm.Kind() != "created" {
		return nil, fmt.Errorf("warm-up create answered %s", warm.Raw)
	}
	if id, _ := warm.Body["ticket_id"].(string); id != "" {
		run.warmed = append(run.warmed, id)
	}
	ids := make([]string, 0, n)
	err = run.measure(side, "create_ticket, created", table, n, func() error {
		for i := range n {
			id, err := c.Create(url, "user-a", fmt.Sprintf("%s-%d", prefix, i))
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := run.measure(side, "create_ticket, replay (deduplicated)", table, n, func() error {
		for i := range n {
			if _, err := c.Expect(url, CreateBody("user-a", fmt.Sprintf("%s-%d", prefix, i)), "deduplicated"); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	err = run.measure(side, "get_ticket", table, n, func() error {
		for _, id := range ids {
			if _, err := c.Expect(url, GetBody("user-a", id), "found"); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, err
}

// deliveryRows measures the worker's attempts, as the stream path and the
// sweep make them (Worker.Handle, Worker.Sweep): a first attempt that
// delivers, the same record again, an attempt the helpdesk refuses for now,
// the sweep that retries and delivers, later retries refused again and for
// good.
func deliveryRows(ctx context.Context, run *capacityRun, w *delivery.Worker, hd *helpdesk.Server, c *Client, url string, ids []string, advance func(time.Duration)) error {
	const side, table = "oncecall, webhook destination", capacityDestTable
	handle := func(id string, want string) error {
		rep, err := w.Handle(ctx, id)
		if err != nil {
			return err
		}
		if rep.Outcome != want {
			return fmt.Errorf("delivery of %s: %s, want %s", id, rep.Outcome, want)
		}
		return nil
	}
	each := func(call string, ids []string, want string, before func() error) error {
		return run.measure(side, call, table, len(ids), func() error {
			for _, id := range ids {
				if before != nil {
					if err := before(); err != nil {
						return err
					}
				}
				if err := handle(id, want); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// The first half delivered at once; the rest are refused for now,
	// retried later, and delivered then.
	half := len(ids) / 2
	if err := each("delivery attempt, first, delivered (Lease, Finish)", ids[:half], delivery.OutcomeDelivered, nil); err != nil {
		return err
	}
	if err := each("delivery attempt, the same stream record again (refused lease)", ids[:half], delivery.OutcomeSkipped, nil); err != nil {
		return err
	}
	if err := each("delivery attempt, helpdesk answers 503, retry scheduled (enters the attention index)", ids[half:], delivery.OutcomeRetried, func() error {
		return hd.Inject(helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 503})
	}); err != nil {
		return err
	}
	advance(time.Hour) // every retry is due
	if err := run.measure(side, "sweep with the retries above due: their attempts, delivered (leave the attention index), and the backlog queries", table, 1, func() error {
		rep, err := w.Sweep(ctx)
		if err == nil && rep.Due != len(ids)-half {
			err = fmt.Errorf("sweep found %d due, want %d", rep.Due, len(ids)-half)
		}
		return err
	}); err != nil {
		return err
	}
	if err := run.measure(side, "sweep, nothing due (the backlog queries)", table, 1, func() error {
		_, err := w.Sweep(ctx)
		return err
	}); err != nil {
		return err
	}
	// Tickets retried twice, then refused for good (the admin rows settle
	// one of them).
	var later []string
	for i := range 2 {
		id, err := c.Create(url, "user-a", fmt.Sprintf("capd-later-%d", i))
		if err != nil {
			return err
		}
		later = append(later, id)
		// 429: certainly not created, so the last refusal ends failed, not
		// uncertain.
		if err := hd.Inject(helpdesk.Fault{Kind: helpdesk.RateLimit}); err != nil {
			return err
		}
		if err := handle(id, delivery.OutcomeRetried); err != nil {
			return err
		}
	}
	advance(time.Hour)
	if err := each("delivery attempt, a later retry answered 429, scheduled again (its attention entry moves to the new due time)", later, delivery.OutcomeRetried, func() error {
		return hd.Inject(helpdesk.Fault{Kind: helpdesk.RateLimit})
	}); err != nil {
		return err
	}
	advance(time.Hour)
	return each("delivery attempt, a retry answered 422, ends failed (its attention key changes from queued to failed)", later, delivery.OutcomeFailed, func() error {
		return hd.Inject(helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 422})
	})
}

// adminRows measures, once each, the store methods each oncecall-admin
// command calls, on the table of the service with a destination, and
// returns how many items that table holds.
func adminRows(ctx context.Context, run *capacityRun, ids []string) (int, error) {
	const side, table = "oncecall-admin", capacityDestTable
	st := run.st
	client := st.Client()
	defer client.Options().HTTPClient.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	admin := dynamo.NewAdmin(client, table)
	found, err := admin.FindTicket(ctx, ids[0])
	if err != nil || found == nil || found.Ticket == nil {
		return 0, fmt.Errorf("find the first ticket: %v %v", found, err)
	}
	// The ticket to settle, found before anything is measured.
	failedPage, err := admin.Deliveries(ctx, dynamo.DeliveryQuery{State: delivery.Failed, Limit: 1})
	if err != nil || len(failedPage.Deliveries) == 0 {
		return 0, fmt.Errorf("no failed delivery to settle: %v", err)
	}
	failedID := failedPage.Deliveries[0].TicketID
	newUser := identity.User{ExternalID: "user-capacity", Tenant: "tenant-a", Name: "cap", Active: true, Functions: []string{ticket.CreateName, ticket.GetName}}
	steps := []struct {
		call string
		f    func() error
	}{
		{"user add", func() error { _, err := admin.AddUser(ctx, newUser); return err }},
		{"user get", func() error { _, err := admin.User(ctx, newUser.ExternalID); return err }},
		{"user disable (read, then a conditional update)", func() error {
			read, err := admin.User(ctx, newUser.ExternalID)
			if err != nil {
				return err
			}
			to := read.User
			to.Active = false
			_, err = admin.UpdateUser(ctx, read, to)
			return err
		}},
		{"user list -tenant tenant-a (5 users)", func() error {
			page, err := admin.Users(ctx, "tenant-a", "", 100)
			if err == nil && len(page.Users) != 5 {
				err = fmt.Errorf("listed %d users, want 5", len(page.Users))
			}
			return err
		}},
		{"user delete (read, then a conditional delete)", func() error {
			read, err := admin.User(ctx, newUser.ExternalID)
			if err != nil {
				return err
			}
			return admin.DeleteUser(ctx, read)
		}},
		{"find -ticket", func() error { _, err := admin.FindTicket(ctx, ids[0]); return err }},
		{"find -op", func() error { _, err := admin.FindOperation(ctx, found.Ticket.OperationKey); return err }},
		{"find -tenant -request", func() error {
			m, err := admin.FindRequest(ctx, found.Ticket.Tenant, found.Ticket.RequestID, "")
			if err == nil && len(m.Found) != 1 {
				err = fmt.Errorf("found %d, want 1", len(m.Found))
			}
			return err
		}},
		{"delivery list -state failed (2 listed)", func() error {
			page, err := admin.Deliveries(ctx, dynamo.DeliveryQuery{State: delivery.Failed, Limit: 100})
			if err == nil && len(page.Deliveries) != 2 {
				err = fmt.Errorf("listed %d, want 2", len(page.Deliveries))
			}
			return err
		}},
		{"delivery settle -as abandoned -expect failed", func() error {
			_, err := admin.Settle(ctx, dynamo.Settlement{TicketID: failedID, As: dynamo.SettleAbandoned, Expect: delivery.Failed, Reason: "measured", Actor: delivery.Actor{Who: "bench"}})
			return err
		}},
		{"delivery recover -dry-run (scans the table)", func() error {
			now := time.Now()
			_, err := admin.Stranded(ctx, now.Add(-15*time.Minute), now)
			return err
		}},
	}
	for _, s := range steps {
		if err := run.measure(side, s.call, table, 1, s.f); err != nil {
			return 0, err
		}
	}
	return st.Count(ctx, table)
}

// peerRows measures the Powertools peer's created calls and replays on its
// own table of the same store.
func peerRows(ctx context.Context, run *capacityRun, o Options, c *Client, n int) error {
	admin := run.st.Client()
	defer admin.Options().HTTPClient.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	if _, err := dynamo.EnsureTable(ctx, admin, PeerTable); err != nil {
		return err
	}
	if _, err := localdb.SeedDemo(ctx, dynamo.New(admin, PeerTable)); err != nil {
		return err
	}
	peerURL, stop, err := startPeer(o.PeerDir, run.st.URL)
	if err != nil {
		return fmt.Errorf("the Powertools peer: %w", err)
	}
	defer stop()
	const side = "Powertools peer"
	if _, err := c.Expect(peerURL, CreateBody("user-a", "peer-cap-warm"), "created"); err != nil {
		return err
	}
	if err := run.measure(side, "create_ticket, created", PeerTable, n, func() error {
		for i := range n {
			if _, err := c.Expect(peerURL, CreateBody("user-a", fmt.Sprintf("peer-cap-%d", i)), "created"); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return run.measure(side, "create_ticket, replay (deduplicated)", PeerTable, n, func() error {
		for i := range n {
			if _, err := c.Expect(peerURL, CreateBody("user-a", fmt.Sprintf("peer-cap-%d", i)), "deduplicated"); err != nil {
				return err
			}
		}
		return nil
	})
}

func capacityPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## What a call costs: capacity measured\n\n")
	r, err := Capacity(ctx, o, o.CapacitySamples)
	fmt.Fprintf(w, "Read and write units as the store's answers report them (`ConsumedCapacity` with `ReturnConsumedCapacity: INDEXES`: the table's units and each index's), summed per kind of call by the counting front before the store; nothing here is computed by hand. The store is dynoxide (crate `dynoxide-rs` %[2]s, reporting itself as `%[1]s`), which computes consumed capacity by DynamoDB's published rules: 1 write unit per KB of an item written (the larger of before and after for an update), 2 for a transactional write, a `ConditionCheck` charged as a write on the item it read; 1 read unit per 4 KB for a strongly consistent read, 2 in a transaction, half for an eventually consistent read or query; index arms charged as the same writes outside a transaction. oncecall asks for `INDEXES` on every request itself (`dynamo.Options`); the Powertools peer's SDK does not ask, so the front adds `\"ReturnConsumedCapacity\":\"INDEXES\"` to each of its requests that lacks it (the last column counts them) and sums its answers the same way. Every row is the average over its calls, one after another, made in this run on this one store (tables `%[3]s`, `%[4]s`, `%[6]s`, `%[5]s`); every oncecall call reads its user's record (a consistent `GetItem`: nothing caches it), the admin commands run once each through `dynamo.Admin`'s methods that the command calls.\n\n",
		localdb.ReportedVersion, localdb.Version, capacityTable, capacityDestTable, PeerTable, capacityInlineTable)
	w.WriteString("An answer with an error (a cancelled transaction, a failed condition) carries no `ConsumedCapacity`, on this store as on DynamoDB, so such a request counts **0** units here; the column \"answers without capacity\" says how many there were. DynamoDB's documentation says a conditional write whose condition fails still consumes write units, and does not say how a cancelled transaction is billed: those requests may cost more on your bill than this table shows.\n\n")
	w.WriteString("The tickets are `perf.CreateBody`'s (a title, a two-line description, two tags): under 1 KB with their delivery attributes or without, so a destination adds no unit to the created call here; a ticket that its delivery attributes carry over 1 KB costs 2 write units more in the transaction (as `internal/dynamo`'s tests measure) and each update is billed on the whole item. The sweep rows are one sweep each; the first found every retry scheduled above due and delivered it.\n\n")
	w.WriteString(CapacityTable(r.Rows))
	if r.Items > 0 {
		fmt.Fprintf(w, "\n`delivery recover` scans the whole table: its units grow with the table (here %d items).\n", r.Items)
	}
	if err != nil {
		return err
	}
	w.WriteString("\n")
	return capacityTargets(w, r.Rows)
}

// capacityTargets writes the capacity run's targets: a created call's
// write units (7 while each create checked a copy of its user's grant in
// its transaction, a ConditionCheck charged as 2) and the writes of the
// user changes (257 and 258 while each wrote 256 copies).
func capacityTargets(w *strings.Builder, rows []CapacityRow) error {
	find := func(side, call string) (CapacityRow, error) {
		for _, r := range rows {
			if r.Side == side && r.Call == call {
				return r, nil
			}
		}
		return CapacityRow{}, fmt.Errorf("no capacity row %q of %q", call, side)
	}
	created, err := find("oncecall, no destination", "create_ticket, created")
	if err != nil {
		return err
	}
	units := created.Total().Total().Write / float64(created.Calls)
	// Two items in the transaction, 2 units each, and the ticket's lookup
	// entry.
	target(w, "write units per created call, from the store's answers", ftoa(units, 2), "≤ 5", units <= 5)
	var got []string
	met := true
	for _, call := range []string{"user add", "user disable (read, then a conditional update)"} {
		r, err := find("oncecall-admin", call)
		if err != nil {
			return err
		}
		n := r.Requests["PutItem"] + r.Requests["UpdateItem"] + r.Requests["DeleteItem"] + r.Requests["TransactWriteItems"]
		got = append(got, strconv.FormatInt(n, 10))
		met = met && n == 1
	}
	target(w, "writes of user add, user disable", strings.Join(got, ", "), "1 each (257, 257 before)", met)
	return nil
}

// CapacityTable formats rows as the report's table.
func CapacityTable(rows []CapacityRow) string {
	var b strings.Builder
	b.WriteString("| Side | Call | Calls | Store requests per call | Read units per call | Write units per call | Of which indexes, per call | Answers without capacity, per call | Requests the front made ask, per call |\n|---|---|---:|---|---:|---:|---|---|---:|\n")
	for _, r := range rows {
		t := r.Total()
		per := func(v float64) string { return ftoa(v/float64(r.Calls), 2) }
		var idx []string
		for _, name := range t.IndexNames() {
			u := t.Indexes[name]
			if u.Read != 0 {
				idx = append(idx, name+" R "+per(u.Read))
			}
			if u.Write != 0 {
				idx = append(idx, name+" W "+per(u.Write))
			}
		}
		if len(idx) == 0 {
			idx = []string{"–"}
		}
		silent := map[string]int64{}
		for op, c := range r.Units {
			if d := c.Requests - c.Reported; d != 0 {
				silent[op] = d
			}
		}
		none := "0"
		if len(silent) > 0 {
			none = Describe(silent, r.Calls)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | **%s** | **%s** | %s | %s | %s |\n", r.Side, r.Call, r.Calls, Describe(r.Requests, r.Calls),
			per(t.Total().Read), per(t.Total().Write), strings.Join(idx, ", "), none, per(float64(r.Added)))
	}
	return b.String()
}
