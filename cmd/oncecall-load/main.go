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
//
// starts the server binary on free loopback ports (or uses a running one),
// runs a mixed plan with real nonces, reads the run's tickets back from the
// store, prints the tally and exits 1 unless nothing was lost, split or
// duplicated. It prints the plan's seed; -seed replays that plan. `make
// stress` runs it (STRESS_SEED=S passes -seed).
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
	_ = fs.Parse(args)
	for *seed == 0 {
		*seed = randomUint64()
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *server != "" {
		s, err := loadtest.Start(*server, "HOOK_KEY="+*hookKey, "TABLE_NAME="+*table, "LOG_LEVEL=INFO")
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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
