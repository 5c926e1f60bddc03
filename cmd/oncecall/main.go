// Command oncecall serves the callback locally: POST /callback and
// GET /functions on 127.0.0.1:3210, backed by an embedded DynamoDB-compatible
// store on 127.0.0.1:8000 (or by DYNAMODB_ENDPOINT when set). It creates the
// table and the demo users when they are missing. `make run` starts it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
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
	// internal/dev/loadtest's TestOversizedHeaderOnTheServer checks both
	// sides of the boundary on the real binary.
	netHTTPHeaderSlack = 4096
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3210", "address to serve the callback on")
	dbAddr := flag.String("db-addr", localdb.DefaultAddr, "address of the embedded DynamoDB-compatible store (unused when DYNAMODB_ENDPOINT is set)")
	flag.Parse()
	if err := run(*addr, *dbAddr); err != nil {
		fmt.Fprintln(os.Stderr, "oncecall:", err)
		os.Exit(1)
	}
}

func run(addr, dbAddr string) error {
	base := config.Defaults
	base.HookKey = localdb.DemoHookKey
	cfg, err := config.Load(os.Getenv, base, app.FunctionNames())
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cfg.Endpoint == "" {
		db, err := localdb.Start(dbAddr)
		if err != nil {
			return fmt.Errorf("embedded store on %s: %w (set DYNAMODB_ENDPOINT to use another store)", dbAddr, err)
		}
		defer func() { _ = db.Close() }()
		cfg.Endpoint = db.URL
		logger.Info("embedded DynamoDB-compatible store (in memory)", "endpoint", db.URL)
	}
	awsCfg, err := app.AWSConfig(ctx, cfg)
	if err != nil {
		return err
	}
	// Runs before the embedded store closes: a connection the store client
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

	h, err := app.Handler(cfg, store, logger)
	if err != nil {
		return err
	}
	// Listen before logging, so that the log names the real address even
	// for ":0" (tests and the stress run ask for any free port).
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	serving := "http://" + ln.Addr().String()
	srv := &http.Server{
		Handler:           httpapi.New(h, cfg.PublicURL),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		MaxHeaderBytes:    maxHeaderBytes - netHTTPHeaderSlack,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("serving", "callback", serving+httpapi.CallbackPath, "functions", serving+httpapi.FunctionsPath, "table", cfg.Table)
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
