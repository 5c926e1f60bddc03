package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/ticket"
)

// API is the part of the DynamoDB client the Store uses. *dynamodb.Client
// implements it; build it with Options, which also makes every request ask
// for its consumed capacity.
type API interface {
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Retry budget of store calls.
const (
	// MaxAttempts is how many server faults and lost connections one store
	// call meets before it gives up; attempts that met contention or
	// throttling do not count (MaxBusyAttempts bounds those).
	MaxAttempts = 3
	// BaseBackoff is the upper bound of the first randomized wait; each
	// later wait doubles it, up to MaxBackoff (exponential backoff with
	// full jitter).
	BaseBackoff = 25 * time.Millisecond
	// MaxBackoff caps one randomized wait.
	MaxBackoff = 500 * time.Millisecond
	// MaxBusyAttempts bounds the attempts of a call that meets contention
	// or throttling when its context has no deadline (the admin tool's
	// calls); with a deadline, such a call is tried again for as long as
	// the next wait fits before it. A conflict is not a refusal: the same
	// request, sent again after a randomized wait, normally succeeds.
	MaxBusyAttempts = 20
)

// Store is the DynamoDB-backed store. It is safe for concurrent use.
type Store struct {
	api    API
	table  string
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	logger *slog.Logger
	ids    *idKeyCache
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that decides whether an operation has expired
// (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// WithSleep sets how the Store waits between attempts (by default a timer
// that returns early with ctx's error when ctx ends first).
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(s *Store) { s.sleep = sleep }
}

// WithLogger sets where the Store writes a debug line for every failed
// attempt (none by default).
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) { s.logger = l }
}

// New returns a Store on table.
func New(api API, table string, opts ...Option) *Store {
	s := &Store{api: api, table: table, now: time.Now, sleep: Sleep, ids: &idKeyCache{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Sleep waits d, or until ctx ends, with ctx's error then: a Store's wait
// between attempts unless WithSleep says otherwise.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Create claims operation rec and writes ticket t in one transaction. When
// out is not nil the ticket item also carries it: the ticket is its own
// outbox record, so delivery adds no item to the transaction. taken is
// false when both were written; true when a live record already holds the
// key, returned as holder, and nothing was written. An error
// (idempotency.ErrBusy or another) means nothing was written either;
// ticket.ErrExists says that another ticket holds t.ID.
//
// The transaction includes these two items and no other: on DynamoDB a
// transaction holds every item it includes and cancels any other that
// includes one of them, so an item shared by every call of a user (its
// record, checked in the transaction) would make one user's concurrent
// calls cancel each other. Whether rec.UserID may make the call is the
// caller's to decide, from the record LoadUser read for this call. The
// application's outcome read finds the first ticket of a request id by
// its id (FirstTicketID), so nothing else records it.
func (s *Store) Create(ctx context.Context, rec idempotency.Record, t ticket.Ticket, out *delivery.Record) (holder idempotency.Record, taken bool, err error) {
	rec = withToken(rec)
	now := s.now()
	in := s.CreateInput(rec, t, out, now)
	var b budget
	for {
		_, err := s.api.TransactWriteItems(ctx, in)
		if err == nil {
			return idempotency.Record{}, false, nil
		}
		var tce *types.TransactionCanceledException
		if errors.As(err, &tce) {
			reasons := tce.CancellationReasons
			switch {
			case failed(reasons, itemClaim):
				holder, live, err := s.claimed(ctx, reasons[itemClaim].Item, rec.Key, now)
				switch {
				case err != nil:
					return idempotency.Record{}, false, err
				case live && holder.Token == rec.Token:
					// An earlier attempt of this very call committed and
					// its answer was lost: the claim is ours.
					return idempotency.Record{}, false, nil
				case live:
					return holder, true, nil
				}
				// The claim vanished (expired or deleted) between the
				// transaction and the read: send the same request again
				// (the same content under the same token).
			case failed(reasons, itemTicket):
				return idempotency.Record{}, false, fmt.Errorf("dynamo: ticket %s: %w", t.ID, ticket.ErrExists)
			case !retryableReasons(reasons):
				return idempotency.Record{}, false, fmt.Errorf("dynamo: transaction cancelled (%s): %w", reasonCodes(reasons), sanitize(err))
			}
		} else if !retryable(err) {
			return idempotency.Record{}, false, classify(err)
		}
		if err := s.backoff(ctx, &b, err); err != nil {
			return idempotency.Record{}, false, err
		}
	}
}

// The items of Create's transaction, by their index in TransactItems,
// which is also their index in the reasons DynamoDB gives for cancelling
// it.
const (
	// itemClaim is the operation's claim on its key: put unless a live
	// record holds the key.
	itemClaim = iota
	// itemTicket is the ticket, carrying its delivery when it has one.
	itemTicket
)

// CreateInput is the one request Create sends: the operation's Put and the
// ticket's insert, with now deciding whether an existing claim has
// expired.
// Benchmarks send it with the bare SDK client to measure the store's own
// floor.
func (s *Store) CreateInput(rec idempotency.Record, t ticket.Ticket, out *delivery.Record, now time.Time) *dynamodb.TransactWriteItemsInput {
	rec = withToken(rec)
	tk := ticketItem(t)
	if out != nil {
		addDelivery(tk, out)
	}
	in := &dynamodb.TransactWriteItemsInput{
		// The token is unique per call, so a retry of this very request
		// after a lost response is answered from DynamoDB's own 10-minute
		// token window instead of being run again. Every attempt sends the
		// same content under it.
		ClientRequestToken: aws.String(rec.Token),
		TransactItems: []types.TransactWriteItem{
			itemClaim: {Put: &types.Put{
				TableName:                           &s.table,
				Item:                                operationItem(rec),
				ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR #expires < :now"),
				ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey, "#expires": TTLAttribute},
				ExpressionAttributeValues:           map[string]types.AttributeValue{":now": numAV(now.Unix())},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			itemTicket: {Update: insertUpdate(&s.table, tk)},
		},
	}
	return in
}

// withToken returns rec with a Token: its own, or a fresh one, which a
// Create keeps for all the attempts of its transaction.
func withToken(rec idempotency.Record) idempotency.Record {
	if rec.Token == "" {
		rec.Token = ticket.NewID()
	}
	return rec
}

// insertUpdate is the Update that writes item as a new item, and is
// refused when its key holds one already: a Put with that condition
// writes the same, but PutItem replaces an item whole, and a role that may
// put a ticket could erase its audit and state. UpdateItem names every
// attribute it touches, so the callback's role can be held to a create's
// (CreateAttributes).
func insertUpdate(table *string, item map[string]types.AttributeValue) *types.Update {
	names := map[string]string{"#pk": PartitionKey}
	values := make(map[string]types.AttributeValue, len(item))
	set := make([]string, 0, len(item))
	for i, n := range slices.Sorted(maps.Keys(item)) {
		if n == PartitionKey {
			continue
		}
		name, value := "#a"+strconv.Itoa(i), ":a"+strconv.Itoa(i)
		names[name], values[value] = n, item[n]
		set = append(set, name+" = "+value)
	}
	return &types.Update{
		TableName:                 table,
		Key:                       map[string]types.AttributeValue{PartitionKey: item[PartitionKey]},
		ConditionExpression:       aws.String("attribute_not_exists(#pk)"),
		UpdateExpression:          aws.String("SET " + strings.Join(set, ", ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// claimed returns the live record holding key: the one DynamoDB returned
// with the cancellation, or, for stores that omit it, a strongly consistent
// read. live is false when no live record holds the key any more.
func (s *Store) claimed(ctx context.Context, item map[string]types.AttributeValue, key string, now time.Time) (holder idempotency.Record, live bool, err error) {
	if len(item) == 0 {
		out, err := s.get(ctx, opKey(key))
		if err != nil {
			return idempotency.Record{}, false, err
		}
		item = out
	}
	if len(item) == 0 {
		return idempotency.Record{}, false, nil
	}
	r, err := decodeOperation(item)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	// The condition of the Put compares whole seconds (expires_at is epoch
	// seconds, as TTL requires), so liveness is judged at the same
	// resolution: a record stays live to the end of its expiry second.
	// Judging it to the nanosecond would call a record gone that the
	// condition still protects, and the call would spin until busy.
	if !r.Live(now.Truncate(time.Second)) {
		return idempotency.Record{}, false, nil
	}
	return r, true, nil
}

// Operation reads the record for key, live or not; (nil, nil) if absent.
func (s *Store) Operation(ctx context.Context, key string) (*idempotency.Record, error) {
	item, err := s.get(ctx, opKey(key))
	if err != nil || item == nil {
		return nil, err
	}
	r, err := decodeOperation(item)
	return &r, err
}

// LoadUser reads the record of externalID with a strongly consistent
// read, or returns identity.ErrUnknown: the handler's one read of its
// caller, on every call.
func (s *Store) LoadUser(ctx context.Context, externalID string) (identity.User, error) {
	item, err := s.get(ctx, userKey(externalID))
	if err != nil {
		return identity.User{}, err
	}
	if item == nil {
		return identity.User{}, identity.ErrUnknown
	}
	return decodeUser(item, externalID)
}

// Vouches reads the record of t's user with a strongly consistent read
// and reports whether it still stands behind t (identity.User.Vouches): a
// deleted user vouches for nothing.
func (s *Store) Vouches(ctx context.Context, t ticket.Ticket) (bool, error) {
	u, err := s.LoadUser(ctx, t.UserID)
	switch {
	case errors.Is(err, identity.ErrUnknown):
		return false, nil
	case err != nil:
		return false, err
	}
	return u.Vouches(t.Tenant, t.UserVersion), nil
}

// ReadTicket reads ticket id and its delivery with a strongly consistent
// read. The ticket is nil when absent; its delivery is nil when it has
// none.
func (s *Store) ReadTicket(ctx context.Context, id string) (*ticket.Ticket, *delivery.Record, error) {
	item, err := s.get(ctx, ticketKey(id))
	if err != nil || item == nil {
		return nil, nil, err
	}
	t, err := decodeTicket(item)
	if err != nil {
		return nil, nil, err
	}
	d, err := decodeDelivery(item)
	if err != nil {
		return nil, nil, err
	}
	return &t, d, nil
}

// Ticket reads one ticket by id, for administration; nil when absent.
func (s *Store) Ticket(ctx context.Context, id string) (*ticket.Ticket, error) {
	item, err := s.get(ctx, ticketKey(id))
	if err != nil || item == nil {
		return nil, err
	}
	t, err := decodeTicket(item)
	return &t, err
}

// ErrNoFunctions is returned by PutUser and AddUser for a user granted no
// function: disable the user instead. (A DynamoDB string set cannot be empty.)
var ErrNoFunctions = errors.New("dynamo: a user must be granted at least one function; disable the user instead")

// PutUser creates or replaces a user record, unversioned: for the tests
// and tools that set a user up as it is (oncecall-admin changes a user
// with Admin.UpdateUser).
func (s *Store) PutUser(ctx context.Context, u identity.User) error {
	if len(u.Functions) == 0 {
		return ErrNoFunctions
	}
	return s.retry(ctx, func() error {
		_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: userItem(u)})
		return err
	})
}

// PutOperation writes a record as is, for reconciliation tools and tests
// (for example a pending operation left by an external effect).
func (s *Store) PutOperation(ctx context.Context, r idempotency.Record) error {
	return s.retry(ctx, func() error {
		_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: operationItem(r)})
		return err
	})
}

func (s *Store) get(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	var out *dynamodb.GetItemOutput
	err := s.retry(ctx, func() (err error) {
		out, err = s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key, ConsistentRead: aws.Bool(true)})
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// retry runs call until it succeeds, fails for good, or the budget is spent.
func (s *Store) retry(ctx context.Context, call func() error) error {
	var b budget
	for {
		err := call()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return classify(err)
		}
		if err := s.backoff(ctx, &b, err); err != nil {
			return err
		}
	}
}

// budget counts the failed attempts of one store call: all of them, which
// set the wait, and the server faults and lost connections among them,
// which MaxAttempts bounds. Contention does not spend the faults' budget:
// a write that met conflicts and then lost its answer after it applied is
// still tried again, and finds its own effect.
type budget struct{ attempts, faults int }

// backoff counts the failed attempt b and waits before the next. When the
// budget or the context's time is spent it returns the final error:
// ErrBusy if the store was contended or throttling (retrying later will
// work), the sanitized cause otherwise.
func (s *Store) backoff(ctx context.Context, b *budget, cause error) error {
	b.attempts++
	if !busy(cause) {
		b.faults++
	}
	attempt := b.attempts
	spent := func() error {
		if busy(cause) || ctx.Err() != nil {
			return idempotency.ErrBusy
		}
		return sanitize(cause)
	}
	dl, hasDeadline := ctx.Deadline()
	limit, spentSoFar := MaxAttempts, b.faults
	if busy(cause) {
		limit, spentSoFar = MaxBusyAttempts, attempt
		if hasDeadline {
			limit = math.MaxInt
		}
	}
	if spentSoFar >= limit || ctx.Err() != nil {
		s.logAttempt(ctx, attempt, cause, -1)
		return spent()
	}
	wait := time.Duration(rand.Int64N(int64(backoffCap(attempt))))
	if hasDeadline && time.Until(dl) < wait {
		s.logAttempt(ctx, attempt, cause, -1)
		return spent()
	}
	s.logAttempt(ctx, attempt, cause, wait)
	if err := s.sleep(ctx, wait); err != nil {
		return idempotency.ErrBusy
	}
	return nil
}

// backoffCap is the upper bound of the randomized wait after the attempt
// numbered attempt: BaseBackoff doubled attempt-1 times, at most MaxBackoff.
func backoffCap(attempt int) time.Duration {
	if attempt > 16 {
		return MaxBackoff
	}
	return min(MaxBackoff, BaseBackoff<<(attempt-1))
}

// logAttempt writes the debug line of a failed attempt: the operation, the
// attempt's number, the AWS error code (with a cancelled transaction's
// reason codes) and the wait before the next attempt, or retry=false when
// the budget or the deadline is spent. Never the error's message, which can
// quote request values.
func (s *Store) logAttempt(ctx context.Context, attempt int, cause error, wait time.Duration) {
	if s.logger == nil || !s.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	var e *Error
	if errors.As(sanitize(cause), &e) {
		attrs = append(attrs, slog.String("op", e.Op), slog.String("code", e.Code))
	} else {
		attrs = append(attrs, slog.String("code", "no_response"))
	}
	var tce *types.TransactionCanceledException
	if errors.As(cause, &tce) {
		attrs = append(attrs, slog.String("reasons", reasonCodes(tce.CancellationReasons)))
	}
	attrs = append(attrs, slog.Int("attempt", attempt))
	if wait < 0 {
		attrs = append(attrs, slog.Bool("retry", false))
	} else {
		attrs = append(attrs, slog.Bool("retry", true), slog.Float64("wait_ms", float64(wait.Microseconds())/1000))
	}
	s.logger.LogAttrs(ctx, slog.LevelDebug, "store attempt failed", attrs...)
}

func reasonCodes(reasons []types.CancellationReason) string {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	return strings.Join(codes, ",")
}

// none reports whether action i did not cause the cancellation.
func none(reasons []types.CancellationReason, i int) bool {
	if i >= len(reasons) {
		return false
	}
	c := aws.ToString(reasons[i].Code)
	return c == "None" || c == ""
}

func failed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

// retryableReasons reports whether a cancellation was caused by contention
// or throttling rather than by a condition or a validation error.
func retryableReasons(reasons []types.CancellationReason) bool {
	found := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			found = true
		default:
			return false
		}
	}
	return found
}

// retryable reports whether err is worth another attempt: contention or
// throttling (busy), a server-side fault, or a connection that failed.
// Repeating a transaction is safe: it carries a ClientRequestToken and its
// conditions.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	if busy(err) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InternalServerError", "ServiceUnavailable", "InternalFailure":
			return true
		}
		return false
	}
	// No API error: the request did not get a DynamoDB answer (connection
	// refused or reset).
	return true
}

// busy reports whether err means contention or throttling.
func busy(err error) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return retryableReasons(tce.CancellationReasons)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"TransactionConflictException", "TransactionInProgressException":
			return true
		}
	}
	return false
}

// classify maps a final error: a spent deadline is ErrBusy; SDK errors
// become *Error, which is safe to log.
func classify(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: deadline reached", idempotency.ErrBusy)
	}
	return sanitize(err)
}

// AddUser creates a user record, at version 0, unless one exists; it
// reports whether it did. One conditional write: when its answer is lost
// and it is sent again, it meets its own record, which counts as added.
func (s *Store) AddUser(ctx context.Context, u identity.User) (bool, error) {
	_, err := s.addUser(ctx, u)
	if errors.Is(err, ErrUserExists) {
		return false, nil
	}
	return err == nil, err
}

// addUser is AddUser, returning the record that holds the id when one
// did (ErrUserExists).
func (s *Store) addUser(ctx context.Context, u identity.User) (*UserRecord, error) {
	if len(u.Functions) == 0 {
		return nil, ErrNoFunctions
	}
	item := userItem(u)
	attempts, current, err := s.writeUser(ctx, u.ExternalID, func() error {
		_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.table, Item: item,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	switch {
	case err != nil || !current.refused:
		return nil, err
	case current.record == nil:
		// Deleted since: nothing of this call's is there.
		return nil, fmt.Errorf("%w (and deleted since)", ErrUserExists)
	case attempts > 1 && sameUserRecord(*current.record, UserRecord{User: u}):
		// An earlier attempt wrote it and its answer was lost.
		return nil, nil
	}
	return current.record, ErrUserExists
}
