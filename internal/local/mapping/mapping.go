package mapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Handler is the function a Mapping or a Schedule invokes, with the event
// as Lambda passes it: stream.Handler's Handle.
type Handler func(ctx context.Context, event json.RawMessage) (any, error)

// StreamsAPI is what a Mapping needs of DynamoDB Streams.
// *dynamodbstreams.Client implements it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Defaults of a Mapping.
const (
	// DefaultPollInterval is how often an idle shard is read again (the
	// event source mapping polls each shard about four times a second).
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultRetryBackoff is the wait before a failed batch is tried again.
	DefaultRetryBackoff = time.Second
)

// Failure is what an on-failure destination receives for records given
// up: their place in the stream, never their contents, as Lambda's
// DDBStreamBatchInfo says it.
type Failure struct {
	// Condition is RetryAttemptsExhausted or RecordAgeExceeded.
	Condition           string
	ShardID             string
	StartSequenceNumber string
	EndSequenceNumber   string
	BatchSize           int
	RetryAttempts       int
}

// Mapping reads one stream and invokes Handler with its records, as the
// event source mapping does. Set the fields, then Run.
type Mapping struct {
	Settings  Settings
	Streams   StreamsAPI
	StreamARN string
	Handler   Handler
	// Region goes into records that carry none.
	Region string
	// Logger gets a line per batch given up and per failed store call;
	// nil logs nothing.
	Logger *slog.Logger
	// OnFailure, when set, is called for each Failure besides the log.
	OnFailure func(Failure)
	// PollInterval and RetryBackoff default to DefaultPollInterval and
	// DefaultRetryBackoff.
	PollInterval, RetryBackoff time.Duration
	// Now is the clock records' age is judged by (time.Now if nil).
	Now func() time.Time
}

// Run reads the stream until ctx ends, every shard in order of descent
// (a child after its parent), and returns ctx's error.
func (m *Mapping) Run(ctx context.Context) error {
	if m.PollInterval <= 0 {
		m.PollInterval = DefaultPollInterval
	}
	if m.RetryBackoff <= 0 {
		m.RetryBackoff = DefaultRetryBackoff
	}
	if m.Now == nil {
		m.Now = time.Now
	}
	done := map[string]bool{}
	for ctx.Err() == nil {
		shards, err := m.shards(ctx)
		if err != nil {
			m.logError(ctx, "describe stream", err)
			sleep(ctx, m.RetryBackoff)
			continue
		}
		progressed := false
		for _, s := range shards {
			id := aws.ToString(s.ShardId)
			if done[id] || (s.ParentShardId != nil && !done[*s.ParentShardId] && known(shards, *s.ParentShardId)) {
				continue
			}
			if err := m.shard(ctx, id); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				m.logError(ctx, "read shard", err)
				sleep(ctx, m.RetryBackoff)
				continue
			}
			done[id] = true // closed and read to its end
			progressed = true
		}
		if !progressed {
			sleep(ctx, m.PollInterval)
		}
	}
	return ctx.Err()
}

func known(shards []types.Shard, id string) bool {
	return slices.ContainsFunc(shards, func(s types.Shard) bool { return aws.ToString(s.ShardId) == id })
}

func (m *Mapping) shards(ctx context.Context) ([]types.Shard, error) {
	var out []types.Shard
	var start *string
	for {
		d, err := m.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &m.StreamARN, ExclusiveStartShardId: start})
		if err != nil {
			return nil, err
		}
		if d.StreamDescription == nil {
			return nil, errors.New("DescribeStream answered no description")
		}
		out = append(out, d.StreamDescription.Shards...)
		if start = d.StreamDescription.LastEvaluatedShardId; start == nil {
			return out, nil
		}
	}
}

// shard reads one shard until it is closed and read to its end (nil) or
// ctx ends.
func (m *Mapping) shard(ctx context.Context, id string) error {
	iter, err := m.iterator(ctx, id, types.ShardIteratorType(m.Settings.StartingPosition), "")
	if err != nil {
		return err
	}
	limit := m.Settings.BatchSize
	var failingAt string
	retries := 0
	for ctx.Err() == nil {
		if iter == "" {
			return nil // closed, and every record read
		}
		out, err := m.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: &iter, Limit: aws.Int32(int32(limit))})
		if err != nil {
			return err
		}
		next := aws.ToString(out.NextShardIterator)
		batch, err := m.batch(out.Records)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			if len(out.Records) == 0 {
				sleep(ctx, m.PollInterval)
			}
			iter = next
			continue
		}
		if at, why := m.expired(batch); why != "" {
			m.giveUp(ctx, id, batch[at:], why, retries)
			iter, failingAt, retries, limit = next, "", 0, m.Settings.BatchSize
			continue
		}
		from, fnErr := m.invoke(ctx, batch)
		if from < 0 {
			iter, failingAt, retries, limit = next, "", 0, m.Settings.BatchSize
			continue
		}
		seq := batch[from].Change.SequenceNumber
		if fnErr != nil && m.Settings.BisectOnError && len(batch) > 1 {
			// Splitting a batch is not a retry: read its first half again.
			limit = max(1, len(batch)/2)
		} else {
			if seq != failingAt {
				failingAt, retries = seq, 0
			}
			retries++
			if m.Settings.MaxRetries >= 0 && retries > m.Settings.MaxRetries {
				m.giveUp(ctx, id, batch[from:], "RetryAttemptsExhausted", retries-1)
				iter, failingAt, retries, limit = next, "", 0, m.Settings.BatchSize
				continue
			}
		}
		sleep(ctx, m.RetryBackoff)
		// Resume from the failed record: it and every later one come again.
		if iter, err = m.iterator(ctx, id, types.ShardIteratorTypeAtSequenceNumber, seq); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (m *Mapping) iterator(ctx context.Context, shard string, typ types.ShardIteratorType, seq string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &m.StreamARN, ShardId: &shard, ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = &seq
	}
	out, err := m.Streams.GetShardIterator(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ShardIterator), nil
}

// batch turns what GetRecords read into the records the filter lets
// through.
func (m *Mapping) batch(recs []types.Record) ([]events.DynamoDBEventRecord, error) {
	var out []events.DynamoDBEventRecord
	for _, r := range recs {
		rec, err := Record(r, m.StreamARN, m.Region)
		if err != nil {
			return nil, err
		}
		ok, err := m.matches(rec)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out, nil
}

func (m *Mapping) matches(rec events.DynamoDBEventRecord) (bool, error) {
	if len(m.Settings.Filters) == 0 {
		return true, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	for _, p := range m.Settings.Filters {
		ok, err := MatchFilter(p, b)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// expired returns the index of the first record past MaxRecordAge and
// the condition, or "" when none is.
func (m *Mapping) expired(batch []events.DynamoDBEventRecord) (int, string) {
	if m.Settings.MaxRecordAge <= 0 {
		return 0, ""
	}
	for i, r := range batch {
		if m.Now().Sub(r.Change.ApproximateCreationDateTime.Time) > m.Settings.MaxRecordAge {
			return i, "RecordAgeExceeded"
		}
	}
	return 0, ""
}

// invoke calls the handler with batch. It returns -1 when the whole batch
// succeeded, else the index of the record to resume from, and the
// function's error when it failed as a whole.
func (m *Mapping) invoke(ctx context.Context, batch []events.DynamoDBEventRecord) (int, error) {
	ev, err := json.Marshal(events.DynamoDBEvent{Records: batch})
	if err != nil {
		return 0, err
	}
	res, err := m.Handler(ctx, ev)
	if err != nil {
		m.logError(ctx, "function error; the batch is retried", err)
		return 0, err
	}
	if !m.Settings.ReportBatchItemFailures {
		return -1, nil
	}
	var answer events.DynamoDBEventResponse
	if b, err := json.Marshal(res); err != nil || json.Unmarshal(b, &answer) != nil {
		// Not a partial batch response: Lambda takes it as success.
		return -1, nil
	}
	from := -1
	for _, f := range answer.BatchItemFailures {
		i := slices.IndexFunc(batch, func(r events.DynamoDBEventRecord) bool { return r.Change.SequenceNumber == f.ItemIdentifier })
		if i < 0 {
			// An identifier that is no record of the batch fails it all.
			return 0, nil
		}
		if from < 0 || i < from {
			from = i
		}
	}
	return from, nil
}

func (m *Mapping) giveUp(ctx context.Context, shard string, recs []events.DynamoDBEventRecord, why string, retries int) {
	f := Failure{Condition: why, ShardID: shard, StartSequenceNumber: recs[0].Change.SequenceNumber,
		EndSequenceNumber: recs[len(recs)-1].Change.SequenceNumber, BatchSize: len(recs), RetryAttempts: retries}
	if m.Logger != nil {
		m.Logger.LogAttrs(ctx, slog.LevelError, "stream records given up; on AWS their place goes to the on-failure destination",
			slog.String("destination", m.Settings.OnFailure), slog.String("condition", why), slog.String("shard_id", shard),
			slog.String("start_sequence_number", f.StartSequenceNumber), slog.String("end_sequence_number", f.EndSequenceNumber),
			slog.Int("batch_size", f.BatchSize), slog.Int("retry_attempts", retries))
	}
	if m.OnFailure != nil {
		m.OnFailure(f)
	}
}

func (m *Mapping) logError(ctx context.Context, msg string, err error) {
	if m.Logger != nil && ctx.Err() == nil {
		m.Logger.LogAttrs(ctx, slog.LevelError, "stream mapping: "+msg, slog.String("cause", err.Error()))
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Schedule invokes Handler with a scheduled event every Every, as an
// EventBridge rate rule does, until ctx ends.
type Schedule struct {
	Every   time.Duration
	Handler Handler
	Region  string
	Logger  *slog.Logger
}

// Run invokes the handler every s.Every until ctx ends, and returns ctx's
// error. A failed invocation is logged and not retried, as the template's
// EventInvokeConfig (MaximumRetryAttempts 0) has it.
func (s *Schedule) Run(ctx context.Context) error {
	if s.Every <= 0 {
		return fmt.Errorf("mapping: schedule every %v", s.Every)
	}
	t := time.NewTicker(s.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case at := <-t.C:
			ev, _ := json.Marshal(ScheduledEvent(at, s.Region))
			if _, err := s.Handler(ctx, ev); err != nil && s.Logger != nil && ctx.Err() == nil {
				s.Logger.LogAttrs(ctx, slog.LevelError, "scheduled invocation failed; the next one comes on schedule", slog.String("cause", err.Error()))
			}
		}
	}
}

// ScheduledEvent is the event an EventBridge schedule delivers at at.
func ScheduledEvent(at time.Time, region string) events.EventBridgeEvent {
	return events.EventBridgeEvent{
		Version: "0", ID: fmt.Sprintf("local-%d", at.UnixNano()), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "000000000000", Time: at.UTC().Truncate(time.Second), Region: region,
		Resources: []string{"arn:aws:events:" + region + ":000000000000:rule/oncecall-local-sweep"},
		Detail:    json.RawMessage("{}"),
	}
}
