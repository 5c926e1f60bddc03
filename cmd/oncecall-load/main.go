// Command oncecall-load sends concurrent callbacks to an oncecall server on
// loopback and checks what it answered against what it stored.
//
//	oncecall-load client -url URL -nonce NONCE -user U -request-id R -args JSON -n 5
//
// prints "ready", waits for a line on standard input (so that several
// processes can be released at once), sends n identical create_ticket calls
// at the same time and prints one JSON result per line.
//
//	oncecall-load stress [-server bin/oncecall | -url URL -db ENDPOINT -table T] [-calls N -ops M -seed S ...]
//	                     [-destination webhook|zendesk -fault-rate 0.1 -dedup-window 2h -lookup]
//
// starts the server binary on free loopback ports (or uses a running one),
// runs a mixed plan with real nonces, reads the run's tickets back from the
// store, prints the tally and exits 1 unless nothing was lost, split or
// duplicated. It prints the plan's seed; -seed replays that plan. `make
// stress` runs it (STRESS_SEED=S passes -seed).
//
// With -destination the server delivers every ticket to a local helpdesk
// started here, which misbehaves on a share (-fault-rate) of its create
// requests: answers lost after creating, 5xx before and after creating,
// 429 with Retry-After, answers past the timeout, resets. The run waits for
// every delivery to leave the queue, prints the count per final delivery
// state, and exits 1 unless nothing was duplicated at the destination or
// lost.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dev/helpdesk"
	"github.com/oncecall/oncecall/internal/dev/loadtest"
	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/nonce"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "client":
		err = client(os.Args[2:])
	case "stress":
		err = stress(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oncecall-load:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: oncecall-load client|stress [flags]  (-h for the flags)")
	os.Exit(2)
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	url := fs.String("url", "", "callback URL")
	nonceHeader := fs.String("nonce", "", "X-Request-Nonce value")
	user := fs.String("user", "user-a", "externalUserId")
	requestID := fs.String("request-id", "", "metadata.request_id")
	argsJSON := fs.String("args", `{"title":"Cannot sign in"}`, "function.content")
	n := fs.Int("n", 5, "identical calls to send at once")
	_ = fs.Parse(args)
	var content map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &content); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	if *url == "" || *nonceHeader == "" || *requestID == "" {
		return errors.New("-url, -nonce and -request-id are required")
	}
	c := loadtest.NewClient(*n)
	calls := loadtest.Identical(*n, *user, *requestID, content)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the start line: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), loadtest.CallTimeout)
	defer cancel()
	enc := json.NewEncoder(os.Stdout)
	for _, r := range loadtest.Run(ctx, c, *url, []string{*nonceHeader}, calls, *n) {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func stress(args []string) error {
	fs := flag.NewFlagSet("stress", flag.ExitOnError)
	server := fs.String("server", "", "oncecall binary to start on free loopback ports (with its own embedded store)")
	url := fs.String("url", "", "base URL of a running server, instead of -server")
	db := fs.String("db", "", "store endpoint of the running server (with -url)")
	table := fs.String("table", "oncecall", "table of the running server (with -url)")
	hookKey := fs.String("hook-key", envOr("HOOK_KEY", localdb.DemoHookKey), "hook key the server verifies nonces with")
	calls := fs.Int("calls", 1200, "calls in all")
	ops := fs.Int("ops", 120, "distinct operations")
	concurrency := fs.Int("concurrency", 16, "calls in flight at once")
	cost := fs.Int("cost", 9, "BCrypt cost of the nonces (AIVAX uses 9)")
	pool := fs.Int("nonces", 8, "distinct nonces, used in turn")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the whole run")
	seed := fs.Uint64("seed", 0, "seed of the plan (0: draw one); the run prints it, and -seed replays the plan")
	dest := fs.String("destination", "", "deliver to a local helpdesk through this destination: webhook or zendesk (with -server)")
	faultRate := fs.Float64("fault-rate", 0.1, "share of the helpdesk's create requests that misbehave (with -destination)")
	dedupWindow := fs.Duration("dedup-window", 2*time.Hour, "how long the webhook helpdesk remembers a key; 0: it does not deduplicate")
	lookup := fs.Bool("lookup", true, "whether the webhook helpdesk answers lookups by external id")
	settle := fs.Duration("settle-timeout", 3*time.Minute, "bound on the wait for every delivery to leave the queue")
	_ = fs.Parse(args)
	for *seed == 0 {
		*seed = randomUint64()
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	env := []string{"HOOK_KEY=" + *hookKey, "TABLE_NAME=" + *table, "LOG_LEVEL=INFO"}
	var hd *helpdesk.Server
	if *dest != "" {
		if *server == "" {
			return errors.New("-destination needs -server: the server is started delivering to the helpdesk")
		}
		var err error
		if hd, env, err = startHelpdesk(*dest, *faultRate, *dedupWindow, *lookup, *seed, env); err != nil {
			return err
		}
		defer func() { _ = hd.Close() }()
		fmt.Printf("helpdesk: %s (%s, capabilities %+v, faults on %.0f%% of creates)\n", hd.URL(), *dest, hd.Capabilities(), *faultRate*100)
	}
	if *server != "" {
		s, err := loadtest.Start(*server, env...)
		if err != nil {
			return err
		}
		defer s.Stop()
		*url, *db, *table = s.URL, s.Endpoint, s.Table
	}
	if *url == "" || *db == "" {
		return errors.New("give -server, or -url and -db")
	}
	fmt.Printf("server: %s (store %s, table %s)\n", *url, *db, *table)

	start := time.Now()
	nonces := make([]string, *pool)
	for i := range nonces {
		var err error
		if nonces[i], err = nonce.Generate(*hookKey, *cost); err != nil {
			return err
		}
	}
	fmt.Printf("nonces: %d at cost %d, made in %v\n", *pool, *cost, time.Since(start).Round(time.Millisecond))

	prefix := "stress-" + randomHex(4)
	fmt.Printf("seed: %d (replay the plan with -seed %d)\n", *seed, *seed)
	plan, err := loadtest.Mixed(loadtest.Plan{Calls: *calls, Ops: *ops, Prefix: prefix, Seed: *seed})
	if err != nil {
		return err
	}
	start = time.Now()
	hc := loadtest.NewClient(*concurrency)
	results := loadtest.Run(ctx, hc, *url+"/callback", nonces, plan, *concurrency)
	elapsed := time.Since(start)
	// Connections dialled but never used would hold the server's graceful
	// shutdown for seconds.
	hc.CloseIdleConnections()

	store := dynamodb.NewFromConfig(dynamo.LocalConfig(os.Getenv("AWS_REGION")), dynamo.Options(*db))
	stored, err := loadtest.StoredTickets(ctx, store, *table, prefix)
	if err != nil {
		return err
	}
	report := loadtest.Tally(plan, results, stored)
	fmt.Printf("elapsed: %v (%d concurrent, %.0f calls/s)\n", elapsed.Round(time.Millisecond), *concurrency, float64(len(plan))/elapsed.Seconds())
	fmt.Print(report)
	if err := report.Check(); err != nil {
		return fmt.Errorf("the run broke a guarantee:\n%w", err)
	}
	if hd == nil {
		return nil
	}
	wait, cancelWait := context.WithTimeout(ctx, *settle)
	defer cancelWait()
	start = time.Now()
	records, err := loadtest.WaitDelivered(wait, dynamo.New(store, *table), stored)
	if err != nil {
		return err
	}
	dr := loadtest.TallyDeliveries(stored, records, hd.Tickets(), hd.Counts().Faults)
	fmt.Printf("deliveries settled in: %v\n", time.Since(start).Round(time.Millisecond))
	fmt.Print(dr)
	if err := dr.Check(); err != nil {
		return fmt.Errorf("the run broke a guarantee:\n%w", err)
	}
	return nil
}

// stressFaults are the helpdesk's misbehaviours in a destination run. The
// server's request timeout (serverTimeout) is shorter than the slow answer.
var stressFaults = []helpdesk.Fault{
	{Kind: helpdesk.LoseAnswer},
	{Kind: helpdesk.FailBefore, Status: 503},
	{Kind: helpdesk.FailAfter, Status: 500},
	{Kind: helpdesk.RateLimit, RetryAfter: "1"},
	{Kind: helpdesk.Slow, Delay: 1500 * time.Millisecond},
	{Kind: helpdesk.ResetBefore},
}

const serverTimeout = "1s"

// startHelpdesk starts the local helpdesk for a destination run and returns
// the server's environment, extended to deliver to it.
func startHelpdesk(kind string, rate float64, window time.Duration, lookup bool, seed uint64, env []string) (*helpdesk.Server, []string, error) {
	caps := delivery.Capabilities{DedupWindow: window, Lookup: lookup}
	switch kind {
	case "webhook":
	case "zendesk":
		caps = delivery.Capabilities{DedupWindow: 2 * time.Hour, Lookup: true}
	default:
		return nil, nil, fmt.Errorf("-destination %q: webhook or zendesk", kind)
	}
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: caps,
		Random: &helpdesk.RandomFaults{Rate: rate, Kinds: stressFaults, Seed: seed}})
	if err != nil {
		return nil, nil, err
	}
	env = append(env, "DESTINATION="+kind, "DESTINATION_TIMEOUT="+serverTimeout, "DELIVERY_SWEEP_INTERVAL=200ms")
	if kind == "webhook" {
		env = append(env, "DESTINATION_URL="+hd.WebhookURL(), "DESTINATION_DEDUP_WINDOW="+window.String(),
			fmt.Sprintf("DESTINATION_LOOKUP=%t", lookup))
	} else {
		env = append(env, "DESTINATION_URL="+hd.URL())
	}
	return hd, env, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func randomUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
