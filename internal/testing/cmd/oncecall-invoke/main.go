// Command oncecall-invoke runs sample events through the real Lambda
// bootstrap under the Lambda Runtime Interface Emulator, against a local
// DynamoDB-compatible store (dynoxide, a child process) seeded with the
// demo users, and prints each answer. `make invoke
// EVENT=events/<name>.json` builds both binaries and runs it.
//
//	oncecall-invoke -bootstrap bin/local/bootstrap -emulator bin/aws-lambda-rie events/duplicate.json
//
// Every run starts from an empty store: the events a named event depends on
// (events/expected.json: after, ticket_from) run first, as set-up, so that
// a duplicate has something to repeat and get_ticket has a ticket to read.
// The function gets the local configuration: HOOK_KEY (the demo key),
// TABLE_NAME and DYNAMODB_ENDPOINT, JSON logs and metrics on.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/app/profile"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rie"
	"github.com/oncecall/oncecall/internal/testing/eventset"
)

// Limits of one run.
const (
	runTimeout    = 2 * time.Minute
	invokeTimeout = 30 * time.Second
	tableName     = "oncecall"
	// functionTimeout is the emulator's function timeout, as template.yaml's.
	functionTimeout = "10"
)

func main() {
	bootstrap := flag.String("bootstrap", "bin/local/bootstrap", "the function's bootstrap, built for this machine")
	emulator := flag.String("emulator", "bin/aws-lambda-rie", "the aws-lambda-rie binary")
	dbAddr := flag.String("db-addr", "127.0.0.1:0", "address of the local store (dynoxide)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: oncecall-invoke [-bootstrap path] [-emulator path] [-db-addr addr] events/<name>.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ok, err := run(ctx, *bootstrap, *emulator, *dbAddr, flag.Args(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "oncecall-invoke:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// run plays the named events and reports whether each matched its
// expectation.
func run(ctx context.Context, bootstrap, emulator, dbAddr string, names []string, out io.Writer) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	// events/*.json also names the files beside the events.
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		b := filepath.Base(n)
		return b == eventset.ManifestFile || b == eventset.SAMEnvFile
	})
	if len(names) == 0 {
		return false, errors.New("no event named")
	}
	dir := filepath.Dir(names[0])
	for _, n := range names[1:] {
		if filepath.Dir(n) != dir {
			return false, errors.New("all events must be in one folder")
		}
	}
	m, err := eventset.Load(dir)
	if err != nil {
		return false, err
	}
	plan, err := m.Plan(names...)
	if err != nil {
		return false, err
	}
	requested := map[string]bool{}
	for _, n := range names {
		requested[filepath.Base(n)] = true
	}

	db, err := localdb.Start(dbAddr)
	if err != nil {
		return false, fmt.Errorf("the local store: %w", err)
	}
	defer func() { _ = db.Close() }()
	cfg := config.Defaults
	cfg.Endpoint, cfg.Table = db.URL, tableName
	awsCfg, err := profile.AWSConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	if _, err := dynamo.EnsureTable(ctx, app.AdminClient(awsCfg, cfg), tableName); err != nil {
		return false, err
	}
	if _, err := localdb.SeedDemo(ctx, app.Store(awsCfg, cfg)); err != nil {
		return false, err
	}

	emu, err := rie.Start(ctx, rie.Options{Emulator: emulator, Bootstrap: bootstrap, Env: Env(db.URL)})
	if err != nil {
		return false, err
	}
	defer func() { _ = emu.Close() }()

	player := m.Player()
	allOK := true
	for i, c := range plan {
		ev, err := player.Event(c)
		if err != nil {
			return false, err
		}
		ictx, icancel := context.WithTimeout(ctx, invokeTimeout)
		inv, err := emu.Invoke(ictx, fmt.Sprintf("invoke-%02d", i+1), ev)
		icancel()
		if err != nil {
			return false, fmt.Errorf("%s: %w", c.Event, err)
		}
		if inv.Status != 200 {
			fmt.Fprintf(out, "%s: the emulator answered %d: %s\n", c.Event, inv.Status, inv.Body)
			for _, l := range emu.Output() {
				fmt.Fprintln(out, "  ", l)
			}
			return false, errors.New("the function did not answer; its output is above")
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(inv.Body, &resp); err != nil {
			return false, fmt.Errorf("%s: the function's answer is not an HTTP API response: %w", c.Event, err)
		}
		checkErr := player.Check(c, eventset.Result{Response: resp, Output: inv.Output})
		if checkErr != nil {
			allOK = false
		}
		if !requested[c.Event] {
			summary := fmt.Sprintf("set-up: %s -> %d", c.Event, resp.StatusCode)
			if id, ok := player.Ticket(c.Event); ok {
				summary += " ticket_id " + id
			}
			fmt.Fprintln(out, summary)
			if checkErr != nil {
				fmt.Fprintln(out, "  does not match events/"+eventset.ManifestFile+":", checkErr)
			}
			continue
		}
		printInvocation(out, dir, c, resp, inv.Output, checkErr)
	}
	return allOK, nil
}

// Env is the function's environment for a local run against endpoint.
func Env(endpoint string) []string {
	return []string{
		config.EnvTable + "=" + tableName,
		config.EnvEndpoint + "=" + endpoint,
		config.EnvHookKey + "=" + localdb.DemoHookKey,
		config.EnvRegion + "=us-east-1",
		config.EnvMetrics + "=true",
		config.EnvFunctionName + "=oncecall-local",
		"AWS_LAMBDA_LOG_FORMAT=JSON",
		"AWS_LAMBDA_LOG_LEVEL=INFO",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + functionTimeout,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1769",
	}
}

func printInvocation(out io.Writer, dir string, c eventset.Case, resp events.APIGatewayV2HTTPResponse, output []string, checkErr error) {
	fmt.Fprintf(out, "== %s: %s\n", filepath.Join(dir, c.Event), c.Row)
	fmt.Fprintln(out, "function output:")
	for _, l := range output {
		fmt.Fprintln(out, "  "+l)
	}
	shown := struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       json.RawMessage   `json:"body"`
	}{resp.StatusCode, resp.Headers, json.RawMessage(resp.Body)}
	if !json.Valid(shown.Body) {
		shown.Body, _ = json.Marshal(resp.Body)
	}
	b, _ := json.Marshal(shown)
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, b, "", "  ")
	fmt.Fprintln(out, "response:")
	fmt.Fprintln(out, pretty.String())
	if checkErr != nil {
		fmt.Fprintln(out, "does NOT match events/"+eventset.ManifestFile+":", checkErr)
		return
	}
	fmt.Fprintf(out, "matches events/%s: %d, outcome %s\n", eventset.ManifestFile, c.Status, c.Outcome)
}
