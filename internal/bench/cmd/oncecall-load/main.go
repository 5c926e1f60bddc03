// Command oncecall-load sends concurrent callbacks to an oncecall server on
// loopback and checks what it answered against what it stored.
//
//	oncecall-load client -url URL -nonce NONCE -user U -request-id R -args JSON -n 5
//
// prints "ready", waits for a line on standard input (so that several
// processes can be released at once), sends n identical create_ticket calls
// at the same time and prints one JSON result per line.
//
//	oncecall-load stress [-server bin/oncecall -servers 2 | -url URL -db ENDPOINT -table T] [-calls N -ops M -seed S ...]
//	                     [-conflict-hold 15ms -lose-rate 0.02 -bursts 20]
//	                     [-destination webhook|zendesk|rt -fault-rate 0.1 -dedup-window 2h -lookup]
//
// starts a store, the fault proxy in front of it applying DynamoDB's
// transaction conflict rule and losing the answers of a share of the
// writes it applied (-conflict-hold, -lose-rate; internal/testing/dynamotest),
// and -servers processes of the server binary on free loopback ports, all
// on that store through the proxy (or uses a running server, without the
// proxy). It runs a mixed plan with real nonces spread over the servers,
// then the seed's burst (ten identical calls at once, spread over the
// servers, busy answers counted, not retried) -bursts times, reads the
// run's tickets back from the store, prints the tally with the busy
// answers and what the conflict rule did, and exits 1 unless nothing was
// lost, split or duplicated and every burst ended one created and nine
// deduplicated. It prints the seed; -seed replays the plan. `make stress`
// runs it (STRESS_SEED=S passes -seed).
//
// With -destination the servers deliver every ticket to a local helpdesk
// started here, which misbehaves on a share (-fault-rate) of its create
// requests: answers lost after creating, 5xx before and after creating,
// 429 with Retry-After, answers past the timeout, resets. The run waits for
// every delivery to leave the queue, prints the count per final delivery
// state, the uncertain deliveries and, separately, those uncertain
// although the helpdesk never got a create request with their key, and
// exits 1 unless nothing was duplicated at the destination or lost and no
// delivery was uncertain although never sent. With -destination rt the
// helpdesk is a fresh, real Request Tracker (internal/local/rtlocal; `make
// rt-install` installs it), and the fault proxy in front of it misbehaves
// instead.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/local/localdb"
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
	var o loadtest.StressOptions
	fs.StringVar(&o.Server, "server", "", "oncecall binary to start on free loopback ports, over a store started here")
	fs.IntVar(&o.Servers, "servers", 2, "server processes on the one store (with -server)")
	fs.StringVar(&o.URL, "url", "", "base URL of a running server, instead of -server (no conflict rule, no burst over two processes)")
	fs.StringVar(&o.DB, "db", "", "store endpoint of the running server (with -url)")
	fs.StringVar(&o.Table, "table", "oncecall", "table of the servers")
	fs.StringVar(&o.HookKey, "hook-key", envOr("HOOK_KEY", localdb.DemoHookKey), "hook key the server verifies nonces with")
	fs.IntVar(&o.Calls, "calls", 1200, "calls in all")
	fs.IntVar(&o.Ops, "ops", 120, "distinct operations")
	fs.IntVar(&o.Concurrency, "concurrency", 16, "calls in flight at once")
	fs.IntVar(&o.Cost, "cost", 9, "BCrypt cost of the nonces (AIVAX uses 9)")
	fs.IntVar(&o.Nonces, "nonces", 8, "distinct nonces, used in turn")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the whole run")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the plan, the lost answers and the helpdesk's faults (0: draw one); the run prints it, and -seed replays the plan")
	fs.DurationVar(&o.Hold, "conflict-hold", 15*time.Millisecond, "with -server: the store is reached through the fault proxy applying DynamoDB's transaction conflict rule, each transaction holding its items this long (0: no proxy)")
	fs.Float64Var(&o.LoseRate, "lose-rate", 0.02, "share of applied writes whose answer the proxy loses (with -conflict-hold)")
	fs.IntVar(&o.Bursts, "bursts", 20, "times the seed's burst is sent: ten identical calls at once, spread over the servers")
	fs.StringVar(&o.Destination, "destination", "", "deliver to a local helpdesk through this destination: webhook, zendesk or rt (a real Request Tracker behind the fault proxy; with -server)")
	fs.Float64Var(&o.FaultRate, "fault-rate", 0.1, "share of the helpdesk's create requests that misbehave (with -destination)")
	fs.DurationVar(&o.DedupWindow, "dedup-window", 2*time.Hour, "how long the webhook helpdesk remembers a key; 0: it does not deduplicate")
	fs.BoolVar(&o.Lookup, "lookup", true, "whether the webhook helpdesk answers lookups by external id")
	fs.DurationVar(&o.SettleTimeout, "settle-timeout", 3*time.Minute, "bound on the wait for every delivery to leave the queue")
	_ = fs.Parse(args)
	for o.Seed == 0 {
		o.Seed = randomUint64()
	}
	if o.URL != "" {
		o.Servers = 0
	}
	o.Out = os.Stdout
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	sum, err := loadtest.RunStress(ctx, o)
	if err != nil {
		return err
	}
	if err := sum.Check(); err != nil {
		return fmt.Errorf("the run broke a guarantee:\n%w", err)
	}
	return nil
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
