package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/nonce"
)

// RTResult is the delivery to a real Request Tracker, against RT's own
// create time in the same run.
type RTResult struct {
	// Create is the round trip of a create sent straight to RT (POST
	// /REST/2.0/ticket, the adapter's body): what a delivery cannot beat.
	Create Durations
	// Latency is, per ticket, from the time oncecall stamps on it to RT
	// answering its create (seen at the proxy in front of RT, on
	// loopback): commit, stream, lease, read, the create itself.
	// Recorded runs to the delivery recorded instead (the check of the
	// created ticket and the result write besides).
	Latency, Recorded Durations
	// Clean is the run without faults; Lost the run in which every first
	// create's answer is lost after RT made the ticket.
	Clean, Lost RTRun
}

// RTRun counts one run's requests.
type RTRun struct {
	Created, Delivered int
	// Requests are the store requests by operation; Creates and Searches
	// the RT requests through the proxy (a search checks each created
	// ticket, or looks one up after an ambiguous create).
	Requests          map[string]int64
	Creates, Searches int
}

// rtTable is the RT run's table.
const rtTable = "oncecall-rt"

// RTDelivery creates n tickets one after another through the callback,
// delivered to a fresh Request Tracker through the stream path and the RT
// adapter (the fault proxy in front of RT only watches), then lost more
// whose first create's answer the proxy loses; it measures RT's own
// creates first.
func RTDelivery(ctx context.Context, st *Store, n, lost int) (RTResult, error) {
	var r RTResult
	if err := rtlocal.Installed(); err != nil {
		return r, err
	}
	in, err := rtlocal.Start("127.0.0.1:0")
	if err != nil {
		return r, err
	}
	defer func() { _ = in.Close() }()
	direct := &http.Client{Timeout: 30 * time.Second}
	defer direct.CloseIdleConnections()
	for range 10 { // warm RT and the connection
		if _, err := rtCreate(ctx, direct, in); err != nil {
			return r, err
		}
	}

	// What the proxy saw RT answer: creates by key, and searches.
	var mu sync.Mutex
	answered := map[string]time.Time{}
	searched := 0
	proxy, err := in.StartProxy(helpdesk.ProxyOptions{Answered: func(op helpdesk.Op, body []byte, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if op == helpdesk.Create {
			answered[rtlocal.KeyOf(body)] = at
		} else {
			searched++
		}
	}})
	if err != nil {
		return r, err
	}
	defer func() { _ = proxy.Close() }()
	c, err := DemoClient(nonce.MinCost)
	if err != nil {
		return r, err
	}
	defer c.Close()
	// waitSearched waits, without reading the store (whose requests are
	// counted), until RT has answered n searches in all: each delivery
	// ends with one, the created ticket's check or the lookup.
	waitSearched := func(n int) error {
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			done := searched >= n
			mu.Unlock()
			if done {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("RT answered %d searches within a minute, want %d", searched, n)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Microsecond):
			}
		}
	}

	// run delivers tickets; in the clean run each is preceded by one
	// create sent straight to RT, so that RT's own time is taken side by
	// side with the deliveries, as its load and warmth change.
	run := func(table string, timeout time.Duration, tickets int, lose bool) (RTRun, []string, *Service, error) {
		var out RTRun
		cfg := serviceConfig(st.URL, table)
		cfg.Delivery = config.Delivery{Destination: config.DestinationRT, URL: proxy.URL, Token: in.Token, RTQueue: in.Queue, Timeout: timeout}
		svc, err := startService(ctx, cfg, func(ctx context.Context, cfg config.Config, store *dynamo.Store, logger *slog.Logger) (*delivery.Outbox, func(), error) {
			return mappedRunner(ctx, cfg, store, logger, mappedOptions{sweepEvery: time.Second, poll: streamPoll})
		})
		if err != nil {
			return out, nil, nil, err
		}
		if lose {
			if err := proxy.Inject(helpdesk.Fault{Kind: helpdesk.LoseAnswer, Count: tickets}); err != nil {
				return out, nil, svc, err
			}
		}
		if err := warmIDKey(ctx, svc); err != nil {
			return out, nil, svc, err
		}
		before, seen := st.Front.Counts(), proxy.Counts()
		mu.Lock()
		base := searched
		mu.Unlock()
		var ids []string
		for i := range tickets {
			if !lose {
				d, err := rtCreate(ctx, direct, in)
				if err != nil {
					return out, ids, svc, err
				}
				r.Create = append(r.Create, d)
			}
			id, err := c.Create(svc.URL, "user-a", fmt.Sprintf("rt-%d-%d", time.Now().UnixNano(), i))
			if err != nil {
				return out, ids, svc, err
			}
			out.Created++
			ids = append(ids, id)
			if !lose {
				if err := waitSearched(base + out.Created); err != nil {
					return out, ids, svc, err
				}
			}
		}
		if err := waitSearched(base + out.Created); err != nil {
			return out, ids, svc, err
		}
		// Let the last result writes land before counting.
		time.Sleep(200 * time.Millisecond)
		out.Requests = st.Front.Counts().Since(before, table)
		after := proxy.Counts()
		out.Creates, out.Searches = after.Creates-seen.Creates, after.Lookups-seen.Lookups
		for _, id := range ids {
			d, err := svc.Store.Delivery(ctx, id)
			if err != nil {
				return out, ids, svc, err
			}
			if d != nil && d.State == delivery.Delivered {
				out.Delivered++
			}
		}
		if out.Delivered != out.Created {
			return out, ids, svc, fmt.Errorf("%d of %d tickets delivered", out.Delivered, out.Created)
		}
		return out, ids, svc, nil
	}
	var ids []string
	var svc *Service
	r.Clean, ids, svc, err = run(rtTable, delivery.DefaultTimeout, n, false)
	if svc != nil {
		defer func() { _ = svc.Close() }()
	}
	if err != nil {
		return r, err
	}
	for _, id := range ids {
		tk, _, err := svc.Store.ReadTicket(ctx, id)
		if err != nil || tk == nil {
			return r, fmt.Errorf("read ticket %s: %v", id, err)
		}
		d, err := svc.Store.Delivery(ctx, id)
		if err != nil || d == nil {
			return r, fmt.Errorf("read delivery %s: %v", id, err)
		}
		mu.Lock()
		at, ok := answered[d.Key]
		mu.Unlock()
		if !ok {
			return r, fmt.Errorf("ticket %s: RT never answered its create", id)
		}
		r.Latency = append(r.Latency, at.Sub(tk.CreatedAt))
		r.Recorded = append(r.Recorded, d.DeliveredAt.Sub(tk.CreatedAt))
	}
	// A short timeout: the lookup after a lost answer waits three of them.
	var lostSvc *Service
	r.Lost, _, lostSvc, err = run(rtTable+"-lost", time.Second, lost, true)
	if lostSvc != nil {
		_ = lostSvc.Close()
	}
	return r, err
}

// rtCreate times one create sent straight to RT with the body the
// adapter sends.
func rtCreate(ctx context.Context, client *http.Client, in *rtlocal.Instance) (time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"Queue": in.Queue, "Subject": "baseline", "Content": "baseline", "ContentType": "text/plain", "Priority": "Medium",
		"CustomFields": map[string]string{rt.KeyField: fmt.Sprintf("baseline-%d", time.Now().UnixNano()), rt.TenantField: "tenant-a", rt.UserField: "user-a", rt.TicketField: "baseline"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL+rt.TicketPath, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+in.Token)
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("baseline create: RT answered %d", res.StatusCode)
	}
	return time.Since(start), nil
}

func rtPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## Delivery to Request Tracker\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := RTDelivery(ctx, st, o.RTSamples, o.RTLostSamples)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d `create_ticket` callbacks, one after another, to oncecall assembled as `make run DESTINATION=rt` assembles it, delivered to a fresh Request Tracker %s (Debian's, `internal/local/rtlocal`: 2 prefork workers, cost-4 hashes) through the stream path (the local event source mapping polled every 5 ms) and the RT adapter, with the fault proxy in front of RT only watching. **Delivery latency** runs from the time oncecall stamps on the ticket to RT answering its create, as the proxy sees it; RT's **own create** is the round trip of a create sent straight to it with the adapter's body, before each callback (%d in all, after ten that warm RT): side by side with the deliveries, as RT's load and warmth change. The adapter checks each created ticket with one search (its key carried by it alone) before the delivery is recorded: the second latency row includes that and the result write.\n\n",
		r.Clean.Created, rtlocal.Version, len(r.Create))
	w.WriteString("| | p50 | p99 |\n|---|---:|---:|\n")
	fmt.Fprintf(w, "| RT's own create, direct | %s | %s |\n", ms(r.Create.P50()), ms(r.Create.P99()))
	fmt.Fprintf(w, "| delivery latency (ticket stamped → RT answered the create) | %s | %s |\n", ms(r.Latency.P50()), ms(r.Latency.P99()))
	fmt.Fprintf(w, "| ticket stamped → delivery recorded (the created ticket checked) | %s | %s |\n\n", ms(r.Recorded.P50()), ms(r.Recorded.P99()))
	perDelivery := func(run RTRun) float64 { return workerRequests(run.Requests, run.Created, run.Delivered) }
	fmt.Fprintf(w, "Store requests, counted at the store: %s per created call in the clean run; RT requests through the proxy: %s creates and %s searches per delivered ticket (the check of the created ticket; no lookup, since no answer was ambiguous). In a second run of %d tickets the proxy loses every first create's answer after RT made the ticket: %s creates and %s searches per delivered ticket (the lookup that finds it, three request timeouts later; no second create), and %s store requests per delivered ticket (two attempts: the first a lease, a read, the user's record, the mark and a result, ending `queued` for the lookup; the second a lease, a read and a result, since a lookup sends nothing).\n\n",
		Describe(r.Clean.Requests, r.Clean.Created), ftoa(float64(r.Clean.Creates)/float64(r.Clean.Delivered), 2), ftoa(float64(r.Clean.Searches)/float64(r.Clean.Delivered), 2),
		r.Lost.Created, ftoa(float64(r.Lost.Creates)/float64(r.Lost.Delivered), 2), ftoa(float64(r.Lost.Searches)/float64(r.Lost.Delivered), 2), ftoa(perDelivery(r.Lost), 2))
	slack := r.Latency.P50() - r.Create.P50()
	target(w, "RT: delivery latency p50 − RT's own create p50", ms(slack), "≤ 100 ms", slack <= 100*time.Millisecond)
	clean := perDelivery(r.Clean)
	target(w, "RT: store requests per delivery (lease, ticket read, user read, mark, result)", ftoa(clean, 2), "≤ 5 (4 before the user's record is read before a create)", clean <= 5)
	lookups := float64(r.Clean.Searches-r.Clean.Creates) / float64(r.Clean.Delivered)
	target(w, "RT: lookups per delivery without an ambiguous answer (searches beyond the created ticket's check)", ftoa(lookups, 2), "0", lookups == 0)
	lostLookups := float64(r.Lost.Searches) / float64(r.Lost.Delivered)
	lostCreates := float64(r.Lost.Creates) / float64(r.Lost.Delivered)
	target(w, "RT: after an ambiguous create, lookups and creates per delivery", ftoa(lostLookups, 2)+" and "+ftoa(lostCreates, 2), "1 and 1", lostLookups == 1 && lostCreates == 1)
	return nil
}
