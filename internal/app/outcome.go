package app

import (
	"log/slog"

	"github.com/oncecall/oncecall/internal/httpapi"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/outcome"
)

// Outcome builds the application's outcome read over store. key is the
// local server's bearer key; "" on AWS, where the route's IAM
// authorization is the credential.
func Outcome(cfg config.Config, store *dynamo.Store, logger *slog.Logger, key string) *outcome.Handler {
	return &outcome.Handler{
		Reader: outcome.Reader{Store: store},
		Key:    key,
		Logger: logger,
	}
}

// OutcomeAPI is the outcome read function's router on Lambda: GET /outcome
// only (every other path is 404), behind the edge's token when cfg has one,
// as every route is.
func OutcomeAPI(cfg config.Config, store *dynamo.Store, logger *slog.Logger) *httpapi.Server {
	return httpapi.New(nil, httpapi.Options{Outcome: Outcome(cfg, store, logger, ""), OriginToken: cfg.EdgeToken})
}
