package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/mapping"
	"github.com/oncecall/oncecall/internal/stream"
)

// templatePath is the -template flag.
var templatePath string

// startDelivery turns on the table's stream and runs, until ctx ends, the
// event source mapping and the schedule that template.yaml gives the
// deliver function, both invoking the handler the Lambda runs
// (stream.Handler). wait blocks until both have stopped.
func startDelivery(ctx context.Context, cfg config.Config, awsCfg aws.Config, admin dynamo.TableAPI, w *delivery.Worker, logger *slog.Logger) (wait func(), err error) {
	set, arn, wait, err := mapping.Start(ctx, mapping.Local{
		Template: templatePath, Function: "DeliverFunction", Table: cfg.Table,
		AWS: awsCfg, Endpoint: cfg.Endpoint, Admin: admin,
		Handler: stream.New(w, logger).Handle, SweepEvery: cfg.Delivery.SweepInterval, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	logger.Info("stream mapping", "stream", arn, "batch_size", set.BatchSize, "filters", len(set.Filters),
		"max_retries", set.MaxRetries, "max_record_age_s", set.MaxRecordAge.Seconds(), "sweep_every", fmt.Sprint(set.SweepEvery))
	return wait, nil
}
