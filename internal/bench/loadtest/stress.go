package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// StressOptions configure RunStress.
type StressOptions struct {
	// Server is the oncecall binary; Servers how many processes of it
	// serve one store (default 1). Without Server, URL, DB and Table name
	// a running server, and no conflict rule applies.
	Server  string
	Servers int
	URL     string
	DB      string
	Table   string
	HookKey string
	// Calls, Ops, Concurrency and Seed shape the mixed run (Mixed).
	Calls, Ops, Concurrency int
	Seed                    uint64
	// Cost and Nonces: the BCrypt cost of the nonces and how many are
	// used in turn.
	Cost, Nonces int
	// Hold, when positive, puts the fault proxy applying DynamoDB's
	// transaction conflict rule between the servers and the store, each
	// transaction holding its items for Hold; LoseRate is the share of
	// applied writes whose answer it loses (dynamotest.Conflicts).
	Hold     time.Duration
	LoseRate float64
	// Bursts is how many times the seed's burst is sent: BurstCalls
	// identical calls at once, spread over the servers.
	Bursts int
	// Destination ("webhook", "zendesk" or "rt"), when set, delivers every
	// ticket to a local helpdesk that misbehaves on FaultRate of its
	// creates (for rt: a real Request Tracker behind the fault proxy,
	// which misbehaves instead); DedupWindow and Lookup are the webhook
	// helpdesk's capabilities. SettleTimeout bounds the wait for the
	// deliveries.
	Destination   string
	FaultRate     float64
	DedupWindow   time.Duration
	Lookup        bool
	SettleTimeout time.Duration
	// Out receives the report as it is made.
	Out io.Writer
}

// StressSummary is what RunStress measured.
type StressSummary struct {
	Calls Report
	// Conflicts is what the conflict rule did (zero without it).
	Conflicts dynamotest.ConflictStats
	Burst     BurstReport
	// Deliveries is set with a Destination.
	Deliveries *DeliveryReport
}

// Check returns what is wrong with the run: a broken guarantee of the
// calls (Report.Check), a burst that did not end in one created and the
// rest deduplicated without a busy answer, or a broken delivery guarantee
// (DeliveryReport.Check).
func (s StressSummary) Check() error {
	var errs []error
	if err := s.Calls.Check(); err != nil {
		errs = append(errs, err)
	}
	if err := s.Burst.Check(); err != nil {
		errs = append(errs, err)
	}
	if s.Deliveries != nil {
		if err := s.Deliveries.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Settings of a stress run.
const (
	// StressTimeout is the server's request timeout to the helpdesk in a
	// destination run; the helpdesk's slow answer takes longer.
	StressTimeout = "1s"
	// StressSweep is the sweep interval of a destination run.
	StressSweep = "200ms"
	// StressHorizon is the request horizon of a destination run: longer
	// than the slowest answer among its faults (RTStressFaults' 7 s), so
	// that the second lookup after a resend sees every create the run's
	// faults held, and short enough for the run to settle.
	StressHorizon = "10s"
)

// StressFaults are the helpdesk's misbehaviours in a destination run.
var StressFaults = stressFaults(1500 * time.Millisecond)

// stressFaults are the misbehaviours of a destination run, the slow
// answer coming after slow.
func stressFaults(slow time.Duration) []helpdesk.Fault {
	return []helpdesk.Fault{
		{Kind: helpdesk.LoseAnswer},
		{Kind: helpdesk.FailBefore, Status: 503},
		{Kind: helpdesk.FailAfter, Status: 500},
		{Kind: helpdesk.RateLimit, RetryAfter: "1"},
		{Kind: helpdesk.Slow, Delay: slow},
		{Kind: helpdesk.ResetBefore},
	}
}

// RunStress starts the store, the fault proxy, the helpdesk and the
// servers o asks for, sends the mixed plan spread over the servers, then
// the seed's bursts, reads the run's tickets back from the store (past the
// proxy) and, with a destination, waits for every delivery to leave the
// queue and compares them with what the helpdesk holds. It writes the
// report to o.Out as it goes. The error is a failure to run; a broken
// guarantee is in the summary's Check.
func RunStress(ctx context.Context, o StressOptions) (StressSummary, error) {
	var sum StressSummary
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	if o.HookKey == "" {
		o.HookKey = localdb.DemoHookKey
	}
	if o.Table == "" {
		o.Table = "oncecall"
	}
	o.Servers = max(o.Servers, 1)
	o.Nonces = max(o.Nonces, 1)
	env := []string{"HOOK_KEY=" + o.HookKey, "TABLE_NAME=" + o.Table, "LOG_LEVEL=INFO"}
	var hd *StressHelpdesk
	if o.Destination != "" {
		if o.Server == "" {
			return sum, errors.New("loadtest: a destination run starts the servers itself: give Server")
		}
		var err error
		if hd, env, err = StartStressHelpdesk(o.Destination, o.FaultRate, o.DedupWindow, o.Lookup, o.Seed, env); err != nil {
			return sum, err
		}
		defer hd.Close()
		fmt.Fprintf(out, "helpdesk: %s, faults on %.0f%% of creates\n", hd.About, o.FaultRate*100)
	}
	urls := []string{o.URL}
	var servers []*Server
	var rule *dynamotest.Conflicts
	if o.Server != "" {
		db, err := localdb.Start("127.0.0.1:0")
		if err != nil {
			return sum, err
		}
		defer func() { _ = db.Close() }()
		o.DB = db.URL
		endpoint := db.URL
		if o.Hold > 0 {
			proxy, stop := dynamotest.StartProxy(db.URL)
			defer stop()
			rule = &dynamotest.Conflicts{Hold: o.Hold, LoseRate: o.LoseRate, Rand: mrand.New(mrand.NewPCG(o.Seed, o.Seed^0x2545f491))}
			proxy.SetConflicts(rule)
			endpoint = proxy.URL
			fmt.Fprintf(out, "store: %s behind the fault proxy %s: DynamoDB's transaction conflict rule (each transaction holds its items %v), %.1f%% of applied writes lose their answer\n",
				db.URL, proxy.URL, o.Hold, 100*o.LoseRate)
		} else {
			fmt.Fprintf(out, "store: %s (no conflict rule)\n", db.URL)
		}
		env = append(env, "DYNAMODB_ENDPOINT="+endpoint)
		urls = urls[:0]
		for i := range o.Servers {
			// One after another: each creates the table and the demo
			// users when missing.
			s, err := Start(o.Server, env...)
			if err != nil {
				return sum, err
			}
			defer s.Stop()
			servers = append(servers, s)
			urls = append(urls, s.URL)
			fmt.Fprintf(out, "server %d: %s (process %d, table %s)\n", i+1, s.URL, s.cmd.Process.Pid, s.Table)
		}
	}
	if urls[0] == "" || o.DB == "" {
		return sum, errors.New("loadtest: give Server, or URL and DB")
	}

	start := time.Now()
	nonces := make([]string, o.Nonces)
	for i := range nonces {
		var err error
		if nonces[i], err = nonce.Generate(o.HookKey, o.Cost); err != nil {
			return sum, err
		}
	}
	fmt.Fprintf(out, "nonces: %d at cost %d, made in %v\n", len(nonces), o.Cost, time.Since(start).Round(time.Millisecond))

	prefix := "stress-" + dynamotest.RandomHex(4)
	fmt.Fprintf(out, "seed: %d (replay the plan with -seed %d)\n", o.Seed, o.Seed)
	plan, err := Mixed(Plan{Calls: o.Calls, Ops: o.Ops, Prefix: prefix, Seed: o.Seed})
	if err != nil {
		return sum, err
	}
	callbacks := make([]string, len(urls))
	for i, u := range urls {
		callbacks[i] = u + "/callback"
	}
	hc := NewClient(o.Concurrency)
	// Connections dialled but never used would hold the servers' graceful
	// shutdown for seconds.
	defer hc.CloseIdleConnections()
	start = time.Now()
	results := RunSpread(ctx, hc, callbacks, nonces, plan, o.Concurrency)
	elapsed := time.Since(start)

	for b := range o.Bursts {
		rid := fmt.Sprintf("%s-burst-%d", prefix, b)
		sum.Burst.Add(Burst(ctx, hc, callbacks, nonces[b%len(nonces)], rid))
	}

	cfg := dynamo.LocalConfig(os.Getenv("AWS_REGION"))
	if c, ok := cfg.HTTPClient.(interface{ CloseIdleConnections() }); ok {
		defer c.CloseIdleConnections()
	}
	store := dynamodb.NewFromConfig(cfg, dynamo.Options(o.DB))
	stored, err := StoredTickets(ctx, store, o.Table, prefix)
	if err != nil {
		return sum, err
	}
	// The bursts' tickets are counted by Burst, not by the plan's tally.
	var planned []StoredTicket
	for _, t := range stored {
		if !isBurst(t.RequestID, prefix) {
			planned = append(planned, t)
		}
	}
	sum.Calls = Tally(plan, results, planned)
	if rule != nil {
		sum.Conflicts = rule.Stats()
	}
	fmt.Fprintf(out, "elapsed: %v (%d concurrent over %d servers, %.0f calls/s)\n", elapsed.Round(time.Millisecond), o.Concurrency, len(urls), float64(len(plan))/elapsed.Seconds())
	fmt.Fprint(out, sum.Calls)
	fmt.Fprintf(out, "busy answers per request: %d of %d (%s)\n", sum.Calls.Busy, sum.Calls.Requests, ratio(sum.Calls.Busy, sum.Calls.Requests))
	if sum.Calls.Errors > 0 {
		printErrors(out, servers)
	}
	if rule != nil {
		fmt.Fprintf(out, "conflict rule: %d transactions cancelled, %d plain writes refused, %d answers lost after the write applied\n",
			sum.Conflicts.Cancelled, sum.Conflicts.Refused, sum.Conflicts.Lost)
	}
	if o.Bursts > 0 {
		fmt.Fprintf(out, "seed burst (%d identical calls at once over %d server processes): %s\n", BurstCalls, len(urls), sum.Burst)
	}
	if hd == nil {
		return sum, nil
	}
	wait, cancelWait := context.WithTimeout(ctx, o.SettleTimeout)
	defer cancelWait()
	start = time.Now()
	records, err := WaitDelivered(wait, dynamo.New(store, o.Table), stored)
	if err != nil {
		return sum, err
	}
	held, err := hd.Tickets(ctx)
	if err != nil {
		return sum, err
	}
	dr := TallyDeliveries(stored, records, held, hd.Faults())
	dr.CountNeverSent(records, hd.KeyRequests())
	sum.Deliveries = &dr
	fmt.Fprintf(out, "deliveries settled in: %v\n", time.Since(start).Round(time.Millisecond))
	fmt.Fprint(out, dr)
	return sum, nil
}

// printErrors prints the servers' ERROR and WARN log lines, a few of
// each, to explain calls that ended in a server error.
func printErrors(out io.Writer, servers []*Server) {
	for i, s := range servers {
		n := 0
		for _, line := range strings.Split(s.Logs(), "\n") {
			if n < 10 && (strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`)) {
				fmt.Fprintf(out, "server %d: %s\n", i+1, line)
				n++
			}
		}
	}
}

func isBurst(requestID, prefix string) bool {
	return len(requestID) > len(prefix)+7 && requestID[:len(prefix)+7] == prefix+"-burst-"
}

func ratio(n, of int) string {
	if of == 0 {
		return "0"
	}
	return fmt.Sprintf("%.4f", float64(n)/float64(of))
}

// StressHelpdesk is where a destination run delivers, as the run reads it
// back: the local helpdesk, or a real Request Tracker behind the fault
// proxy.
type StressHelpdesk struct {
	// About describes it for the report.
	About string
	// Tickets lists what it holds, external ids (oncecall's ticket ids)
	// and all.
	Tickets func(context.Context) ([]helpdesk.Ticket, error)
	// KeyRequests counts the create requests that carried each key;
	// Faults the requests made to misbehave.
	KeyRequests func() map[string]int
	Faults      func() int
	// Close stops it.
	Close func()
}

// RTStressTimeout is the servers' request timeout to Request Tracker in an
// rt run: longer than RT takes for one create on a busy machine (about
// 0.3 s when idle), so that a create RT is still making is not looked up
// before it is made (the lookup comes three timeouts after the create).
// The proxy in front of RT forwards at most as many requests as RT has
// workers and drops one whose client gave up while it waited, as a front
// does, so RT's own backlog never holds a create that long.
const RTStressTimeout = "5s"

// RTStressFaults are the proxy's misbehaviours in front of RT: the same,
// the slow answer past RTStressTimeout.
var RTStressFaults = stressFaults(7 * time.Second)

// StartStressHelpdesk starts the helpdesk of a destination run (faults on
// rate of its creates, drawn from seed) and returns the servers'
// environment, extended to deliver to it.
func StartStressHelpdesk(kind string, rate float64, window time.Duration, lookup bool, seed uint64, env []string) (*StressHelpdesk, []string, error) {
	caps := delivery.Capabilities{DedupWindow: window, Lookup: lookup}
	switch kind {
	case "webhook":
	case "zendesk":
		caps = delivery.Capabilities{DedupWindow: 2 * time.Hour, Lookup: true}
	case "rt":
		return startStressRT(rate, seed, env)
	default:
		return nil, nil, fmt.Errorf("destination %q: webhook, zendesk or rt", kind)
	}
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: caps,
		Random: &helpdesk.RandomFaults{Rate: rate, Kinds: StressFaults, Seed: seed}})
	if err != nil {
		return nil, nil, err
	}
	env = append(env, "DESTINATION="+kind, "DESTINATION_TIMEOUT="+StressTimeout, "DELIVERY_SWEEP_INTERVAL="+StressSweep,
		"DESTINATION_REQUEST_HORIZON="+StressHorizon)
	if kind == "webhook" {
		env = append(env, "DESTINATION_URL="+hd.WebhookURL(), "DESTINATION_DEDUP_WINDOW="+window.String(),
			fmt.Sprintf("DESTINATION_LOOKUP=%t", lookup))
	} else {
		env = append(env, "DESTINATION_URL="+hd.URL())
	}
	return &StressHelpdesk{
		About:       fmt.Sprintf("the local helpdesk %s (%s, capabilities %+v)", hd.URL(), kind, hd.Capabilities()),
		Tickets:     func(context.Context) ([]helpdesk.Ticket, error) { return hd.Tickets(), nil },
		KeyRequests: hd.KeyRequests,
		Faults:      func() int { return hd.Counts().Faults },
		Close:       func() { _ = hd.Close() },
	}, env, nil
}

// startStressRT starts a fresh Request Tracker and the fault proxy in
// front of it.
func startStressRT(rate float64, seed uint64, env []string) (*StressHelpdesk, []string, error) {
	in, err := rtlocal.Start("127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	proxy, err := in.StartProxy(helpdesk.ProxyOptions{KeyOf: rtlocal.KeyOf,
		Random: &helpdesk.RandomFaults{Rate: rate, Kinds: RTStressFaults, Seed: seed}})
	if err != nil {
		_ = in.Close()
		return nil, nil, err
	}
	env = append(env, "DESTINATION=rt", "DESTINATION_URL="+proxy.URL, "DESTINATION_TOKEN="+in.Token, "RT_QUEUE="+in.Queue,
		"DESTINATION_TIMEOUT="+RTStressTimeout, "DELIVERY_SWEEP_INTERVAL="+StressSweep, "DESTINATION_REQUEST_HORIZON="+StressHorizon)
	return &StressHelpdesk{
		About:       fmt.Sprintf("Request Tracker %s at %s behind the fault proxy %s", rtlocal.Version, in.URL, proxy.URL),
		Tickets:     in.Tickets,
		KeyRequests: proxy.KeyRequests,
		Faults:      func() int { return proxy.Counts().Faults },
		Close: func() {
			_ = proxy.Close()
			_ = in.Close()
		},
	}, env, nil
}

// BurstCalls is the size of the seed's burst: ten identical calls at once.
const BurstCalls = 10

// BurstReport counts the answers of bursts.
type BurstReport struct {
	// Rounds is the bursts sent; Clean those that ended one created and
	// the rest deduplicated, all naming one ticket, with no busy answer.
	Rounds, Clean                      int
	Created, Deduplicated, Busy, Other int
	// Examples describes a few bursts that were not clean.
	Examples []string
}

// Add counts one burst's results.
func (b *BurstReport) Add(results []Result) {
	b.Rounds++
	n := map[string]int{}
	ids := map[string]bool{}
	for _, r := range results {
		switch {
		case r.Status == http.StatusOK && (r.Outcome == "created" || r.Outcome == "deduplicated"):
			n[r.Outcome]++
			ids[r.TicketID] = true
		case r.Outcome == "busy":
			n["busy"]++
		default:
			n["other"]++
		}
	}
	b.Created += n["created"]
	b.Deduplicated += n["deduplicated"]
	b.Busy += n["busy"]
	b.Other += n["other"]
	if n["created"] == 1 && n["deduplicated"] == len(results)-1 && len(ids) == 1 {
		b.Clean++
	} else if len(b.Examples) < 5 {
		b.Examples = append(b.Examples, fmt.Sprintf("round %d: %v over %d tickets", b.Rounds, n, len(ids)))
	}
}

// Check returns an error unless every burst was clean.
func (b BurstReport) Check() error {
	if b.Clean == b.Rounds {
		return nil
	}
	return fmt.Errorf("seed burst: %d of %d rounds clean, %d busy answers (%v)", b.Clean, b.Rounds, b.Busy, b.Examples)
}

func (b BurstReport) String() string {
	return fmt.Sprintf("%d of %d rounds 1 created + %d deduplicated; answers: %d created, %d deduplicated, %d busy, %d other",
		b.Clean, b.Rounds, BurstCalls-1, b.Created, b.Deduplicated, b.Busy, b.Other)
}

// Burst sends the seed's burst: BurstCalls identical create_ticket calls
// for request requestID of user-a, all at once, spread in turn over urls,
// each sent once (a busy answer is counted, not retried). The results are
// in call order.
func Burst(ctx context.Context, client *http.Client, urls []string, nonce, requestID string) []Result {
	calls := Identical(BurstCalls, "user-a", requestID, map[string]any{"title": "Cannot sign in", "priority": "high"})
	results := make([]Result, len(calls))
	var ready, wg sync.WaitGroup
	release := make(chan struct{})
	ready.Add(len(calls))
	for i, c := range calls {
		wg.Go(func() {
			ready.Done()
			<-release
			results[i] = Do(ctx, client, urls[i%len(urls)], nonce, c)
		})
	}
	ready.Wait()
	close(release)
	wg.Wait()
	return results
}
