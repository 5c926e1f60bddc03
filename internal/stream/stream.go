package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Worker is what the Handler drives. *delivery.Worker implements it.
type Worker interface {
	Handle(ctx context.Context, id string) (delivery.Report, error)
	Sweep(ctx context.Context) (delivery.SweepReport, error)
}

// MaxConcurrent bounds the records of one batch delivered at once.
const MaxConcurrent = 8

// removeEvent is the eventName of a stream record for a deleted item.
const removeEvent = "REMOVE"

// ticketPrefix is the partition key prefix of ticket items.
const ticketPrefix = "ticket#"

// Handler serves the worker function's events.
type Handler struct {
	w      Worker
	logger *slog.Logger
}

// New returns a Handler for w. logger gets one line per event; nil logs
// nothing.
func New(w Worker, logger *slog.Logger) *Handler { return &Handler{w: w, logger: logger} }

// ErrUnknownEvent is returned for an event that is neither a stream batch
// nor a scheduled event.
var ErrUnknownEvent = errors.New("stream: neither a DynamoDB stream batch nor a scheduled event")

// SweepResult is the answer to a scheduled event: what the sweep did and
// what waits.
type SweepResult struct {
	Due      int            `json:"due"`
	Outcomes map[string]int `json:"outcomes"`
	Backlog  Backlog        `json:"backlog"`
}

// Backlog is delivery.Backlog as the answer shows it, the age in seconds.
type Backlog struct {
	Queued              int     `json:"queued"`
	OldestQueuedSeconds float64 `json:"oldest_queued_seconds"`
	Uncertain           int     `json:"uncertain"`
	Failed              int     `json:"failed"`
	// AtLeast: a count stopped at the store's bound (a lower bound).
	AtLeast bool `json:"at_least,omitempty"`
}

// Handle serves one event: a DynamoDB stream batch is answered with the
// records that failed (for the event source mapping's partial batch
// response), a scheduled event with what the sweep did.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Records    []json.RawMessage `json:"Records"`
		Source     string            `json:"source"`
		DetailType string            `json:"detail-type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownEvent, err)
	}
	switch {
	case probe.Records != nil:
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("stream: decode DynamoDB stream batch: %w", err)
		}
		return h.Records(ctx, ev), nil
	case probe.Source == "aws.events" || probe.Source == "aws.scheduler" || probe.DetailType == "Scheduled Event":
		rep, err := h.w.Sweep(ctx)
		h.logSweep(ctx, rep, err)
		if err != nil {
			return nil, err
		}
		b := rep.Backlog
		return SweepResult{Due: rep.Due, Outcomes: rep.Outcomes, Backlog: Backlog{
			Queued: b.Queued, OldestQueuedSeconds: b.OldestQueued.Seconds(), Uncertain: b.Uncertain, Failed: b.Failed, AtLeast: b.AtLeast,
		}}, nil
	}
	return nil, ErrUnknownEvent
}

// Records delivers the ticket of every record of a stream batch and
// returns those whose handling failed, so that the event source mapping
// retries them (bounded by its retry and record-age settings; past them the
// batch goes to the on-failure queue).
func (h *Handler) Records(ctx context.Context, ev events.DynamoDBEvent) events.DynamoDBEventResponse {
	var mu sync.Mutex
	var failed []events.DynamoDBBatchItemFailure
	sem := make(chan struct{}, MaxConcurrent)
	var wg sync.WaitGroup
	for _, rec := range ev.Records {
		if rec.EventName == removeEvent {
			// A deletion (TTL's, or a person's) leaves nothing to deliver;
			// the template's filter lets none through.
			continue
		}
		id, ok := ticketID(rec)
		if !ok {
			continue // not a ticket: the filter lets none through, but a test event might
		}
		seq := rec.Change.SequenceNumber
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := h.w.Handle(ctx, id); err != nil {
				h.logRecord(ctx, id, err)
				mu.Lock()
				failed = append(failed, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return events.DynamoDBEventResponse{BatchItemFailures: failed}
}

func ticketID(rec events.DynamoDBEventRecord) (string, bool) {
	pk, ok := rec.Change.Keys["pk"]
	if !ok || pk.DataType() != events.DataTypeString {
		return "", false
	}
	id, ok := strings.CutPrefix(pk.String(), ticketPrefix)
	return id, ok && id != ""
}

func (h *Handler) logRecord(ctx context.Context, id string, err error) {
	if h.logger != nil {
		h.logger.LogAttrs(ctx, slog.LevelError, "stream record failed; the event source mapping retries it",
			slog.String("ticket_id", id), slog.String("cause", err.Error()))
	}
}

func (h *Handler) logSweep(ctx context.Context, rep delivery.SweepReport, err error) {
	if h.logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.Int("due", rep.Due),
		slog.Int("queued", rep.Backlog.Queued),
		slog.Float64("oldest_queued_s", rep.Backlog.OldestQueued.Seconds()),
		slog.Int("uncertain", rep.Backlog.Uncertain),
		slog.Int("failed", rep.Backlog.Failed),
		slog.Bool("backlog_at_least", rep.Backlog.AtLeast),
	}
	for k, v := range rep.Outcomes {
		attrs = append(attrs, slog.Int("outcome_"+k, v))
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("cause", err.Error()))
	}
	h.logger.LogAttrs(ctx, level, "sweep", attrs...)
}
