package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/app/profile"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
)

// Store is the embedded DynamoDB-compatible store on a loopback port, with a
// Front before it, and a second, uncounted, port for the benchmarks' own
// housekeeping (Prune).
type Store struct {
	*localdb.Server
	Front *Front

	admin    *http.Server
	adminURL string
	adminRun chan struct{}
}

// StartStore starts the embedded store on 127.0.0.1.
func StartStore() (*Store, error) {
	s := &Store{}
	srv, err := localdb.StartWith("127.0.0.1:0", func(h http.Handler) http.Handler {
		s.Front = NewFront(h)
		return s.Front
	})
	if err != nil {
		return nil, err
	}
	s.Server = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	s.adminURL = "http://" + ln.Addr().String()
	direct, _ := url.Parse(srv.Direct)
	s.admin = &http.Server{Handler: httputil.NewSingleHostReverseProxy(direct), ReadHeaderTimeout: 5 * time.Second}
	s.adminRun = make(chan struct{})
	go func() {
		defer close(s.adminRun)
		_ = s.admin.Serve(ln)
	}()
	return s, nil
}

// Close stops both ports of the store.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.admin.Shutdown(ctx)
	<-s.adminRun
	return s.Server.Close()
}

// Client returns a bare SDK client for the store, configured as oncecall's.
func (s *Store) Client() *dynamodb.Client {
	return dynamodb.NewFromConfig(dynamo.LocalConfig("us-east-1"), dynamo.Options(s.URL))
}

// Service is oncecall's local HTTP server on a loopback port.
type Service struct {
	// URL is the callback URL.
	URL     string
	Handler *callback.Handler
	Store   *dynamo.Store
	Table   string

	srv  *http.Server
	done chan struct{}
	stop func()
}

// NoNonceCheck is an Authenticator that accepts every call whose nonce has
// a BCrypt hash's shape, such as UncheckedNonce, without BCrypt work. It
// exists only for the peer comparison, which leaves nonce verification out
// of both sides, and the contention run, where BCrypt would hide the
// store; nothing else may use it.
type NoNonceCheck struct{}

// Verify accepts anything the handler's checks before BCrypt let through.
func (NoNonceCheck) Verify(string) error { return nil }

// MaxCost is AIVAX's cost.
func (NoNonceCheck) MaxCost() int { return AIVAXCost }

// UncheckedNonce has a cost-9 BCrypt hash's shape, which the handler's
// checks before BCrypt accept, and is a hash of no key: the nonce of the
// clients of a handler with NoNonceCheck.
const UncheckedNonce = "$2b$09$" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"

// StartService assembles oncecall exactly as cmd/oncecall does (app.Handler
// over app.Store, the demo users seeded into a fresh table) over storeURL,
// and serves it on 127.0.0.1. The log lines are encoded as in production and
// discarded.
func StartService(ctx context.Context, storeURL, table string) (*Service, error) {
	return startService(ctx, serviceConfig(storeURL, table), nil)
}

// serviceConfig is the local configuration of a service over storeURL.
func serviceConfig(storeURL, table string) config.Config {
	cfg := config.Defaults
	cfg.Table, cfg.Endpoint, cfg.HookKey = table, storeURL, localdb.DemoHookKey
	return cfg
}

// outboxFunc builds a service's outbox over its store and returns what
// stops it once the service has stopped serving.
type outboxFunc func(ctx context.Context, cfg config.Config, store *dynamo.Store, logger *slog.Logger) (*delivery.Outbox, func(), error)

// startService is StartService for cfg, with the outbox withOutbox builds
// (none when nil).
func startService(ctx context.Context, cfg config.Config, withOutbox outboxFunc) (*Service, error) {
	return startWrappedService(ctx, cfg, withOutbox, nil)
}

// startWrappedService is startService with the HTTP handler passed through
// wrap (none when nil), such as a limit of concurrent invocations.
func startWrappedService(ctx context.Context, cfg config.Config, withOutbox outboxFunc, wrap func(http.Handler) http.Handler) (*Service, error) {
	awsCfg, err := profile.AWSConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dynamo.EnsureTable(ctx, app.AdminClient(awsCfg, cfg), cfg.Table); err != nil {
		return nil, err
	}
	store := app.Store(awsCfg, cfg)
	if _, err := localdb.SeedDemo(ctx, store); err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	var outbox *delivery.Outbox
	stop := func() {}
	if withOutbox != nil {
		if outbox, stop, err = withOutbox(ctx, cfg, store, logger); err != nil {
			return nil, err
		}
	}
	h, err := app.Handler(cfg, store, logger, outbox)
	if err != nil {
		stop()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		return nil, err
	}
	var handler http.Handler = httpapi.New(h, httpapi.Options{})
	if wrap != nil {
		handler = wrap(handler)
	}
	s := &Service{
		URL: "http://" + ln.Addr().String() + httpapi.CallbackPath, Handler: h, Store: store, Table: cfg.Table,
		srv:  &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}), stop: stop,
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(fmt.Sprintf("oncecall service: %v", err))
		}
	}()
	return s, nil
}

// Close stops the service, then its outbox, and waits for them.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	s.stop()
	return err
}

// Prune deletes every item of table but the users' records, through the
// uncounted port, between timed
// samples, never during one, so that every sample meets a table of the
// same size whatever came before it.
func (s *Store) Prune(ctx context.Context, table string) error {
	client := dynamodb.NewFromConfig(dynamo.LocalConfig("us-east-1"), dynamo.Options(s.adminURL))
	defer client.Options().HTTPClient.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	var start map[string]types.AttributeValue
	for {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ExclusiveStartKey: start,
			ProjectionExpression: aws.String("#pk"), ExpressionAttributeNames: map[string]string{"#pk": dynamo.PartitionKey}})
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			pk, _ := item[dynamo.PartitionKey].(*types.AttributeValueMemberS)
			if pk == nil || strings.HasPrefix(pk.Value, "user#") {
				continue
			}
			if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table,
				Key: map[string]types.AttributeValue{dynamo.PartitionKey: pk}}); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}

// Count returns how many items table holds, read through the uncounted
// port.
func (s *Store) Count(ctx context.Context, table string) (int, error) {
	client := dynamodb.NewFromConfig(dynamo.LocalConfig("us-east-1"), dynamo.Options(s.adminURL))
	defer client.Options().HTTPClient.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ExclusiveStartKey: start, Select: types.SelectCount})
		if err != nil {
			return n, err
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		start = out.LastEvaluatedKey
	}
}

// warmIDKey has s read the id key the callback reads once per container
// (and the first call on a new table creates), so that a count of store
// requests that starts after it holds each call's own requests only.
func warmIDKey(ctx context.Context, s *Service) error {
	_, err := s.Store.FirstTicketID(ctx, "warm-up", "warm-up")
	return err
}
