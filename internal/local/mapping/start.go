package mapping

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/oncecall/oncecall/internal/dynamo"
)

// Local is what Start needs to run a function's stream and schedule
// against a table on a local store.
type Local struct {
	// Template is the SAM template ("" finds it with FindTemplate);
	// Function the resource whose events are run.
	Template, Function string
	// Table is the table whose stream is turned on and read.
	Table string
	// AWS and Endpoint configure the streams client; Admin turns the
	// stream on.
	AWS      aws.Config
	Endpoint string
	Admin    dynamo.TableAPI
	// Handler is the function's handler.
	Handler Handler
	// SweepEvery, when positive, replaces the template's schedule.
	SweepEvery time.Duration
	// PollInterval, when positive, replaces DefaultPollInterval.
	PollInterval time.Duration
	Logger       *slog.Logger
}

// Start reads l's settings from the template, turns on the table's stream
// as the template declares it, and runs the Mapping and the Schedule until
// ctx ends; wait blocks until both have stopped. It returns the settings
// it runs with and the stream's ARN.
func Start(ctx context.Context, l Local) (set Settings, streamARN string, wait func(), err error) {
	path := l.Template
	if path == "" {
		if path, err = FindTemplate(); err != nil {
			return set, "", nil, err
		}
	}
	if set, err = Read(path, l.Function); err != nil {
		return set, "", nil, err
	}
	if l.SweepEvery > 0 {
		set.SweepEvery = l.SweepEvery
	}
	if streamARN, err = dynamo.EnableStream(ctx, l.Admin, l.Table, set.StreamViewType); err != nil {
		return set, "", nil, err
	}
	streams := dynamodbstreams.NewFromConfig(l.AWS, func(o *dynamodbstreams.Options) {
		if l.Endpoint != "" {
			o.BaseEndpoint = aws.String(l.Endpoint)
		}
	})
	m := &Mapping{Settings: set, Streams: streams, StreamARN: streamARN, Handler: l.Handler, Region: l.AWS.Region,
		Logger: l.Logger, PollInterval: l.PollInterval}
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	if set.SweepEvery > 0 {
		s := &Schedule{Every: set.SweepEvery, Handler: l.Handler, Region: l.AWS.Region, Logger: l.Logger}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	return set, streamARN, wg.Wait, nil
}
