// Command oncecall serves the callback locally: POST /callback, POST /mcp and
// GET /functions on 127.0.0.1:3210 (loopback only; -addr binds elsewhere,
// and says what that exposes), backed by the local store (dynoxide, a
// DynamoDB emulator, started on 127.0.0.1:8000), or by DYNAMODB_ENDPOINT when
// set. It creates the
// table and the demo users when they are missing. `make run` starts it.
//
// With DESTINATION set it also delivers tickets the way AWS does: it turns
// on the table's stream as template.yaml declares it, reads it as the
// Lambda event source mapping does (internal/local/mapping, with the
// template's batch size, filter, retries and on-failure path) and invokes
// the deliver function's own handler (internal/stream) with each batch; the
// sweep runs on the template's schedule, or every DELIVERY_SWEEP_INTERVAL
// when that is set. Without a DESTINATION_URL (or ZENDESK_SUBDOMAIN) it
// starts the local helpdesk on 127.0.0.1:8025 and delivers there; with
// DESTINATION=rt, a fresh Request Tracker on 127.0.0.1:8030 instead
// (internal/local/rtlocal; `make rt-install` installs it).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/app/profile"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
)

// Server limits.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = httpapi.RequestTimeout + 5*time.Second
	// maxHeaderBytes bounds the request line and all headers together, up
	// to and including the empty line that ends them; one byte more is
	// answered 431. A nonce is 60 bytes.
	maxHeaderBytes = 16 << 10
	// netHTTPHeaderSlack is what net/http reads beyond
	// http.Server.MaxHeaderBytes before it answers 431 (its read limit is
	// MaxHeaderBytes plus 4096 bytes of "bufio slop"). The server asks for
	// that much less, so that the limit is maxHeaderBytes exactly;
	// internal/bench/loadtest's TestOversizedHeaderOnTheServer checks both
	// sides of the boundary on the real binary.
	netHTTPHeaderSlack = 4096
)

// DefaultAddr is where the server listens without -addr: loopback only.
const DefaultAddr = "127.0.0.1:3210"

func main() {
	addr, dbAddr, hdAddr := addFlags(flag.CommandLine)
	flag.Parse()
	if note := storeClash(flag.CommandLine, os.Getenv(config.EnvEndpoint)); note != "" {
		fmt.Fprintln(os.Stderr, "oncecall:", note)
	}
	if err := run(*addr, *dbAddr, *hdAddr); err != nil {
		fmt.Fprintln(os.Stderr, "oncecall:", explainStore(err, flag.CommandLine, os.Getenv(config.EnvEndpoint)))
		os.Exit(1)
	}
}

// storeClash is what a start says when both DYNAMODB_ENDPOINT (endpoint)
// and -db-addr (make run's DB_ADDR) name a store: the endpoint wins, as it
// does for the admin tool, and the note says how to have the other. It is
// "" when at most one of them is given.
func storeClash(fs *flag.FlagSet, endpoint string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "db-addr" })
	if !given || endpoint == "" {
		return ""
	}
	return fmt.Sprintf("%s=%s is set, and wins: the store is there, as for oncecall-admin, and -db-addr %s (DB_ADDR) is not used. "+
		"To start the local store on %s instead, unset %s", config.EnvEndpoint, endpoint, fs.Lookup("db-addr").Value, fs.Lookup("db-addr").Value, config.EnvEndpoint)
}

// explainStore turns a store request that got no answer, at the store
// DYNAMODB_ENDPOINT (endpoint) names, into what to fix, as the admin tool
// says it: where no store answers, which setting named it (and that it won
// over -db-addr, when that was given too), and how to have the local
// store instead. Any other error is returned as it is.
func explainStore(err error, fs *flag.FlagSet, endpoint string) error {
	if endpoint == "" || !dynamo.NoAnswer(err) {
		return err
	}
	from := config.EnvEndpoint
	if storeClash(fs, endpoint) != "" {
		from += ", which wins over -db-addr " + fs.Lookup("db-addr").Value.String() + " (DB_ADDR)"
	}
	return fmt.Errorf("no store answers at %s (from %s): check the URL and that the store is running, or unset %s to start the local store on %s",
		endpoint, from, config.EnvEndpoint, fs.Lookup("db-addr").Value)
}

// addFlags declares the command's flags on fs.
func addFlags(fs *flag.FlagSet) (addr, dbAddr, hdAddr *string) {
	addr = fs.String("addr", DefaultAddr, "address to serve POST /callback, GET /functions and POST /mcp on: loopback only by default. "+
		"Another address (0.0.0.0:3210, a LAN address) exposes them to every host that can reach it, and with the local demo hook key, which is public, anyone there can create tickets: set HOOK_KEY (and MCP_TOKEN) first")
	dbAddr = fs.String("db-addr", localdb.DefaultAddr, "address of the local store, dynoxide (unused when DYNAMODB_ENDPOINT is set)")
	hdAddr = fs.String("helpdesk-addr", helpdesk.DefaultAddr, "address of the local helpdesk (started when DESTINATION is set without DESTINATION_URL or ZENDESK_SUBDOMAIN)")
	fs.StringVar(&hdControlAddr, "helpdesk-control-addr", "", "address of the local helpdesk's control API alone, open during a refuse fault (default: "+helpdesk.DefaultControlAddr+
		" with the default -helpdesk-addr, else a free port on its host, logged as control_during_refuse)")
	fs.StringVar(&rtAddr, "rt-addr", rtlocal.DefaultAddr, "address of the local Request Tracker (started when DESTINATION=rt is set without DESTINATION_URL)")
	fs.StringVar(&templatePath, "template", "", "the SAM template whose stream, mapping and schedule a delivering run follows (default: template.yaml of the repository that holds the working directory)")
	return addr, dbAddr, hdAddr
}

func run(addr, dbAddr, hdAddr string) error {
	base := config.Defaults
	base.HookKey = localdb.DemoHookKey
	local := wantsLocalHelpdesk(os.Getenv)
	getenv := os.Getenv
	if local {
		// Checked by config like any URL; the helpdesk's real one, known
		// once it listens, replaces it.
		at := hdAddr
		if os.Getenv(config.EnvDestination) == config.DestinationRT {
			at = rtAddr
		}
		getenv = func(k string) string {
			if k == config.EnvDestinationURL {
				return "http://" + at
			}
			return os.Getenv(k)
		}
	}
	cfg, err := config.Load(getenv, base, app.FunctionNames())
	if err != nil {
		return err
	}
	var hd *helpdesk.Server
	var rtd *rtlocal.Instance
	switch {
	case local && cfg.Delivery.Destination == config.DestinationRT:
		if rtd, err = localRT(&cfg.Delivery); err != nil {
			return err
		}
		defer func() { _ = rtd.Close() }()
	case local:
		if hd, err = localHelpdesk(hdAddr, hdControlAddr, &cfg.Delivery); err != nil {
			return err
		}
		defer func() { _ = hd.Close() }()
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if rtd != nil {
		logger.Info("local Request Tracker", "url", rtd.URL, "queue", rtd.Queue, "web_login", "root / "+rtlocal.RootPassword,
			"destination", cfg.Delivery.Destination)
	}
	if hd != nil {
		logger.Info("local helpdesk", "url", hd.URL(), "destination", cfg.Delivery.Destination, "destination_url", cfg.Delivery.URL,
			"control", hd.URL()+helpdesk.ControlPath+"/", "control_during_refuse", hd.ControlURL()+helpdesk.ControlPath+"/")
	}

	if cfg.Endpoint == "" {
		db, err := localStore(dbAddr)
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		cfg.Endpoint = db.URL
		logger.Info("local store (dynoxide, in memory)", "endpoint", db.URL, "pinned", "dynoxide-rs "+localdb.Version+", which reports "+localdb.ReportedVersion)
	}
	awsCfg, err := profile.AWSConfig(ctx, cfg)
	if err != nil {
		return err
	}
	// Runs before the local store closes: a connection the store client
	// dialled but never used would hold that graceful shutdown for seconds.
	defer func() {
		if c, ok := awsCfg.HTTPClient.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}()
	store := app.Store(awsCfg, cfg, dynamo.WithLogger(logger))
	setup, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	admin := app.AdminClient(awsCfg, cfg)
	table, err := dynamo.EnsureTable(setup, admin, cfg.Table)
	if err != nil {
		return err
	}
	if table.Created {
		logger.Info("created table", "table", cfg.Table)
	}
	if len(table.IndexesAdded) > 0 {
		logger.Info("added indexes", "table", cfg.Table, "indexes", table.IndexesAdded)
	}
	if table.TTL == dynamo.TTLNotEnabled {
		logger.Warn("time to live not enabled on this store; oncecall enforces expiry itself", "table", cfg.Table)
	}
	n, err := localdb.SeedDemo(setup, store)
	if err != nil {
		return fmt.Errorf("seed demo users: %w", err)
	}
	logger.Info("demo users", "added", n, "present", len(localdb.DemoUsers))

	w, err := app.Worker(cfg, store, logger)
	if err != nil {
		return err
	}
	if w != nil {
		// The stream path stops before the store and the helpdesk close.
		wctx, stopDelivery := context.WithCancel(ctx)
		wait, err := startDelivery(wctx, cfg, awsCfg, admin, w, logger)
		if err != nil {
			stopDelivery()
			return err
		}
		defer func() { stopDelivery(); wait() }()
		logger.Info("delivering tickets", "destination", cfg.Delivery.Destination, "capabilities", fmt.Sprintf("%+v", w.Destination.Capabilities()))
	}
	// Listen before logging, so that the log names the real address even
	// for ":0" (tests and the stress run ask for any free port).
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return startError("the callback", addr, "-addr", "ADDR", "", err)
	}
	defer func() { _ = ln.Close() }() // a refusal below; Shutdown closes it otherwise
	serving := "http://" + ln.Addr().String()
	if !loopback(ln.Addr()) {
		demo := cfg.HookKey == localdb.DemoHookKey
		logger.Warn("serving beyond this machine: every host that reaches this address can call /callback, /functions and /mcp",
			"addr", ln.Addr().String(), "public_demo_hook_key", demo, "mcp_token", cfg.MCPToken != "")
	}
	key, err := outcomeKey(os.Getenv)
	if err != nil {
		return err
	}
	// A web page the operator visits can reach loopback: the server
	// refuses cross-origin requests, and on loopback foreign Host names.
	api, err := app.Server(cfg, store, logger, app.ServerOptions{
		Outbox: app.Outbox(cfg, w),
		Local:  true, LoopbackHost: loopback(ln.Addr()),
		Outcome: app.Outcome(cfg, store, logger, key),
	})
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		MaxHeaderBytes:    maxHeaderBytes - netHTTPHeaderSlack,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("serving", "callback", serving+httpapi.CallbackPath, "functions", serving+httpapi.FunctionsPath, "mcp", serving+httpapi.MCPPath, "table", cfg.Table)
	// The application's credential for GET /outcome, on this machine only:
	// on AWS the route takes IAM authorization instead, and no key exists.
	logger.Info("outcome read", "url", serving+httpapi.OutcomePath, "outcome_key", key)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// EnvOutcomeKey sets the local outcome read's key; without it, each run
// makes a new one and logs it.
const EnvOutcomeKey = "OUTCOME_KEY"

// minOutcomeKey is the shortest OUTCOME_KEY accepted.
const minOutcomeKey = 16

// outcomeKey is the local outcome read's bearer key: OUTCOME_KEY, or a
// new random one.
func outcomeKey(getenv func(string) string) (string, error) {
	k := getenv(EnvOutcomeKey)
	if k == "" {
		return rand.Text(), nil
	}
	if len(k) < minOutcomeKey || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", fmt.Errorf("%s must be at least %d visible ASCII characters (unset, a new key is made and logged)", EnvOutcomeKey, minOutcomeKey)
	}
	return k, nil
}

// loopback reports whether a is a loopback address, reachable from this
// machine only.
func loopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// wantsLocalHelpdesk reports whether DESTINATION names a destination and
// nothing says where it is: make run then delivers to the local helpdesk.
func wantsLocalHelpdesk(getenv func(string) string) bool {
	return getenv(config.EnvDestination) != "" && getenv(config.EnvDestinationURL) == "" && getenv(config.EnvZendeskSubdomain) == ""
}

// hdControlAddr is the -helpdesk-control-addr flag.
var hdControlAddr string

// localHelpdesk starts the local helpdesk on addr, its control API alone
// on ctl (helpdesk.ControlAddrFor(addr) when ""), behaving as d declares
// (a webhook that deduplicates for d.DedupWindow and answers lookups if
// d.Lookup; Zendesk's shape as Zendesk does), and points d at it.
func localHelpdesk(addr, ctl string, d *config.Delivery) (*helpdesk.Server, error) {
	caps := delivery.Capabilities{DedupWindow: 2 * time.Hour, Lookup: true}
	if d.Destination == config.DestinationWebhook {
		caps = delivery.Capabilities{DedupWindow: d.DedupWindow, Lookup: d.Lookup}
	}
	if ctl == "" {
		ctl = helpdesk.ControlAddrFor(addr)
	}
	// The control API stays reachable there while a refuse fault closes
	// addr.
	hd, err := helpdesk.Start(addr, helpdesk.Options{Capabilities: caps, ControlAddr: ctl})
	if errors.Is(err, helpdesk.ErrControlAddr) {
		return nil, startError("the local helpdesk's control API", ctl, "-helpdesk-control-addr", "HELPDESK_CONTROL_ADDR", "", err)
	}
	if err != nil {
		return nil, startError("the local helpdesk", addr, "-helpdesk-addr", "HELPDESK_ADDR", config.EnvDestinationURL+" to deliver to another helpdesk", err)
	}
	d.URL = hd.URL()
	if d.Destination == config.DestinationWebhook {
		d.URL = hd.WebhookURL()
	}
	return hd, nil
}

// rtAddr is the -rt-addr flag.
var rtAddr string

// localRT starts a fresh local Request Tracker on rtAddr and points d at
// it: its URL, root's token and the queue with oncecall's fields.
func localRT(d *config.Delivery) (*rtlocal.Instance, error) {
	in, err := rtlocal.Start(rtAddr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, startError("the local Request Tracker", rtAddr, "-rt-addr", "RT_ADDR", config.EnvDestinationURL+" to deliver to another RT", err)
		}
		return nil, err
	}
	d.URL, d.Token, d.RTQueue = in.URL, in.Token, in.Queue
	return in, nil
}

// localStore starts the local store on addr.
func localStore(addr string) (*localdb.Server, error) {
	db, err := localdb.Start(addr)
	if err != nil {
		return nil, startError("the local store", addr, "-db-addr", "DB_ADDR", config.EnvEndpoint+" to use another store", err)
	}
	return db, nil
}

// startError says why what could not listen on addr. An address in use is
// most often an earlier `make run` still running: the error says so, and
// names the make variable and the flag that move what to another address,
// and the setting other (when not "") that does without it.
func startError(what, addr, flag, makeVar, other string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s on %s: %w", what, addr, err)
	}
	// The address taken is the one the listener's error names.
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		addr = op.Addr.String()
	}
	msg := fmt.Sprintf("%s cannot listen on %s: the address is already in use, most likely by an earlier server (make run) still running: stop it (Ctrl-C where it runs), or move this one: make run %s=HOST:PORT (the flag %s HOST:PORT; port 0 picks a free one)",
		what, addr, makeVar, flag)
	if other != "" {
		msg += ", or set " + other
	}
	return errors.New(msg)
}
