package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/oncecall/oncecall/internal/delivery"
)

// SettleAs is what an operator decides a delivery is: one of
// SettleDelivered, SettleNotCreated and SettleAbandoned.
type SettleAs string

// Decisions an operator can make.
const (
	// SettleDelivered: the operator found the ticket in the helpdesk; its
	// id (and URL) are recorded and the delivery is delivered.
	SettleDelivered SettleAs = "delivered"
	// SettleNotCreated: the operator checked that the helpdesk does not
	// have the ticket; the delivery is queued again, due at once, with a
	// fresh attempt budget, under the same idempotency key or, where the
	// destination replays errors per key, one derived from it.
	SettleNotCreated SettleAs = "not_created"
	// SettleAbandoned: nothing more is attempted; a reason is required.
	SettleAbandoned SettleAs = "abandoned"
)

// To is the state a decision leaves the delivery in.
func (d SettleAs) To() delivery.State {
	switch d {
	case SettleDelivered:
		return delivery.Delivered
	case SettleNotCreated:
		return delivery.Queued
	case SettleAbandoned:
		return delivery.Abandoned
	}
	return ""
}

// Action is the decision's name in the audit: "settle." and the decision.
func (d SettleAs) Action() string { return "settle." + string(d) }

// NotCreatedNote is the note the audit entry of SettleNotCreated carries:
// what the decision did besides changing the state.
const NotCreatedNote = "queued again, due now, under the same idempotency key (a new one derived from it where the destination replays errors per key); attempts reset to 0 (a fresh budget) and maybe_sent cleared"

// Limits of a settlement.
const (
	// MaxSettleReason bounds an operator's reason, in bytes (as much as a
	// destination's refusal is kept).
	MaxSettleReason = delivery.MaxReason
	// MaxHelpdeskID bounds a helpdesk id an operator records, in bytes.
	MaxHelpdeskID = 256
	// MaxHelpdeskURL bounds a helpdesk URL an operator records, in bytes.
	MaxHelpdeskURL = 2048
)

// Settlement is one operator decision on the delivery of one ticket.
type Settlement struct {
	TicketID string
	As       SettleAs
	// Expect is the state the operator saw. The decision is made only
	// while the delivery is still stored in it.
	Expect delivery.State
	// Version, when not zero, is the delivery version the operator saw
	// (every delivery starts at 1); the decision is made only while the
	// delivery is still at it.
	Version int64
	// Receipt names the ticket in the helpdesk, for SettleDelivered (ID
	// required, URL optional).
	Receipt delivery.Receipt
	// Reason is the operator's why: required for SettleAbandoned. It is
	// stored on the item and in its audit, never logged and never shown to
	// the model: it may quote the ticket.
	Reason string
	// Actor is who made the decision: Who, its AWS identity or, off AWS,
	// an unverified name, is required.
	delivery.Actor
	// At is when, as the audit records it; the zero time means the
	// store's time (StoreTime). Whatever At says, the not-created horizon
	// is judged on the store's time.
	At time.Time
	// Keep is how long after the decision its operation is kept at least
	// (the deployment's RETENTION; for a delivery queued again, also its
	// horizon), so that the decision stays the answer to the same call for
	// that long. Zero leaves the operation's expiry as it is.
	Keep time.Duration
}

// ErrNoTicket is returned by Settle for a ticket that does not exist.
var ErrNoTicket = errors.New("dynamo: no such ticket")

// ErrNoDelivery is returned by Settle for a ticket created without a
// destination: it has no delivery to settle.
var ErrNoDelivery = errors.New("dynamo: the ticket has no delivery (created without a destination)")

// SettleConflictError is returned by Settle when the delivery is not as the
// operator saw it, an attempt holds it, or (not-created) its SafeAfter is
// still ahead on the store's clock. Nothing was written. It matches
// ErrConflict.
type SettleConflictError struct {
	// Current is the delivery as the store holds it.
	Current delivery.Record
	// At is the store's time when the settlement was tried (StoreTime),
	// which the lease and SafeAfter are judged on.
	At time.Time
}

func (e *SettleConflictError) Error() string {
	return fmt.Sprintf("dynamo: delivery not settled: it is %s at version %d", e.Current.Reported(e.At), e.Current.Version)
}

// Is reports whether target is ErrConflict.
func (e *SettleConflictError) Is(target error) bool { return target == ErrConflict }

// check refuses a settlement that cannot be made whatever the store holds.
func (s *Settlement) check() error {
	switch {
	case s.As.To() == "":
		return fmt.Errorf("dynamo: no decision %q", s.As)
	case s.As == SettleAbandoned && s.Expect == delivery.Abandoned:
		return errors.New("dynamo: the delivery is abandoned already")
	case !delivery.Allowed(s.Expect, s.As.To(), delivery.ByOperator):
		return fmt.Errorf("dynamo: a delivery in state %q is not settled", s.Expect)
	case s.As == SettleDelivered && (s.Receipt.ID == "" || len(s.Receipt.ID) > MaxHelpdeskID || len(s.Receipt.URL) > MaxHelpdeskURL):
		return fmt.Errorf("dynamo: delivered needs a helpdesk id of 1 to %d bytes and a URL of at most %d", MaxHelpdeskID, MaxHelpdeskURL)
	case s.As != SettleDelivered && (s.Receipt != delivery.Receipt{}):
		return errors.New("dynamo: only delivered records a helpdesk id")
	case s.As == SettleAbandoned && s.Reason == "":
		return errors.New("dynamo: abandoned needs a reason")
	case len(s.Reason) > MaxSettleReason:
		return fmt.Errorf("dynamo: a reason is at most %d bytes", MaxSettleReason)
	case s.Who == "":
		return errors.New("dynamo: a settlement needs to know who makes it")
	case s.Version < 0:
		return errors.New("dynamo: a delivery version is 1 or more")
	}
	return nil
}

// Settle makes an operator's decision on the delivery of a ticket and
// returns the delivery as it now stands. It reads the ticket first (a
// consistent GetItem whose answer also gives the store's time,
// StoreTime), extends the operation's expiry when s.Keep asks it, and only
// then writes the decision, with one conditional UpdateItem: the delivery
// is in s.Expect, at s.Version when given, no attempt holds a lease, and
// for not-created its SafeAfter is not after the store's time. A failure
// of the extension therefore leaves nothing decided, and running the same
// settle again finishes it. Every decision releases the lease
// (lease_owner "", so that a late worker's Finish, conditioned on its own
// lease, fails with ErrLeaseLost), raises the version by one, sets since
// to the decision's time and appends the decision to the item's audit
// list:
//
//   - SettleDelivered records dest_id, dest_url and delivered_at and takes
//     the ticket out of AttentionIndex.
//   - SettleNotCreated queues it again: maybe_sent false, attempts 0,
//     next_at now, listed in AttentionIndex as queued from now, so that
//     the next sweep attempts it. The audit entry counts as a resend
//     (delivery.Record.KeyFor): the same key, or for a destination that
//     replays errors per key a new one derived from it.
//   - SettleAbandoned takes it out of AttentionIndex; nothing more is
//     attempted.
//
// A refusal writes nothing and is ErrNoTicket, ErrNoDelivery or a
// *SettleConflictError holding the delivery as it is. A decision that is
// already made (an earlier try or run of this very settlement applied it,
// its answer lost: the delivery is in its state, its last audit entry is
// this decision and, when s.Version is given, the version is the one it
// made) is returned as made.
func (a *Admin) Settle(ctx context.Context, s Settlement) (delivery.Record, error) {
	if err := s.check(); err != nil {
		return delivery.Record{}, err
	}
	item, now, err := a.readAt(ctx, s.TicketID)
	if err != nil {
		return delivery.Record{}, err
	}
	r, err := settleable(item)
	if err != nil {
		return delivery.Record{}, err
	}
	if s.made(r) {
		return *r, nil
	}
	if !s.fits(r, now) {
		return delivery.Record{}, &SettleConflictError{Current: *r, At: now}
	}
	at := s.At
	if at.IsZero() {
		at = now
	}
	at = at.UTC().Truncate(time.Millisecond)
	decision := s.decision(at)
	if decision.Proof, err = a.prove(ctx, s.TicketID, decision); err != nil {
		return delivery.Record{}, err
	}
	if s.Keep > 0 {
		if err := a.keepOperation(ctx, item, at.Add(s.Keep)); err != nil {
			return delivery.Record{}, fmt.Errorf("dynamo: nothing decided: the operation's expiry could not be extended first (run the same settle again): %w", err)
		}
	}
	in := settleInput(a.table, s, decision, now)
	var out *dynamodb.UpdateItemOutput
	err = a.store.retry(ctx, func() (err error) {
		out, err = a.api.UpdateItem(ctx, in)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return a.settleRefused(ctx, ccf.Item, s, now)
	case err != nil:
		return delivery.Record{}, err
	}
	d, err := decodeDelivery(out.Attributes)
	if err == nil && d == nil {
		err = fmt.Errorf("dynamo: settled ticket %s has no delivery", s.TicketID)
	}
	if err != nil {
		return delivery.Record{}, err
	}
	return *d, nil
}

// StoreTime is the time of a store's answer: its Date header, which
// DynamoDB (and the local store) sends with every answer, to the second
// and rounded down, so that a time judged against it is judged early,
// never late.
func StoreTime(metadata middleware.Metadata) (time.Time, bool) {
	t, ok := awsmiddleware.GetServerTime(metadata)
	return t.UTC(), ok && !t.IsZero()
}

// ErrNoStoreTime is returned by Settle when the store's answer carried no
// time (no Date header): the horizon of a decision is judged on the
// store's clock, never on the operator's.
var ErrNoStoreTime = errors.New("dynamo: the store's answer carried no Date header: a settlement is judged on the store's clock and cannot be made without it")

// readAt reads ticket id consistently and returns it with the time of the
// store's answer.
func (a *Admin) readAt(ctx context.Context, id string) (map[string]types.AttributeValue, time.Time, error) {
	var out *dynamodb.GetItemOutput
	err := a.store.retry(ctx, func() (err error) {
		out, err = a.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &a.table, Key: ticketKey(id), ConsistentRead: aws.Bool(true)})
		return err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	now, ok := StoreTime(out.ResultMetadata)
	if !ok {
		return nil, time.Time{}, ErrNoStoreTime
	}
	return out.Item, now, nil
}

// settleable decodes the delivery of a ticket item to settle: ErrNoTicket
// without an item, ErrNoDelivery without a delivery.
func settleable(item map[string]types.AttributeValue) (*delivery.Record, error) {
	if len(item) == 0 {
		return nil, ErrNoTicket
	}
	r, err := decodeDelivery(item)
	if err == nil && r == nil {
		err = ErrNoDelivery
	}
	return r, err
}

// fits reports whether the decision can be made on r at the store's time
// now: the condition of its UpdateItem, judged on the read before it.
func (s *Settlement) fits(r *delivery.Record, now time.Time) bool {
	return r.State == s.Expect && (s.Version == 0 || r.Version == s.Version) && r.LeaseOwner == "" &&
		(s.As != SettleNotCreated || !r.SafeAfter.After(now))
}

// made reports whether r holds this very decision, made by an earlier try
// or run whose answer was lost: r is in the decision's state, its last
// audit entry is the decision (who, action, from, reason and helpdesk
// reference alike) and, when s.Version is given, r is at the version the
// decision made. Recognized by the version, never by a clock.
func (s *Settlement) made(r *delivery.Record) bool {
	n := len(r.Audit)
	if n == 0 || r.State != s.As.To() || (s.Version != 0 && r.Version != s.Version+1) {
		return false
	}
	last := r.Audit[n-1]
	return last.Who == s.Who && last.Action == s.As.Action() && last.From == s.Expect && last.Reason == s.Reason && last.Receipt == s.Receipt
}

// keepOperation extends the expiry of the operation that made the ticket
// item to until, when it would end sooner. An operation without an expiry,
// or gone, is left as it is.
func (a *Admin) keepOperation(ctx context.Context, item map[string]types.AttributeValue, until time.Time) error {
	op := (&decoder{item: item}).str(attrOpKey, false)
	if op == "" {
		return nil
	}
	err := a.store.retry(ctx, func() error {
		_, err := a.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &a.table, Key: opKey(op),
			ConditionExpression:       aws.String("attribute_exists(#pk) AND #exp < :until"),
			UpdateExpression:          aws.String("SET #exp = :until"),
			ExpressionAttributeNames:  map[string]string{"#pk": PartitionKey, "#exp": TTLAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{":until": numAV(until.Unix())},
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // kept as long already, without an expiry, or gone
	}
	return err
}

// settleInput is the UpdateItem of settlement s, audited as decision d
// (made at d.At), judged at the store's time now.
func settleInput(table string, s Settlement, d delivery.Decision, now time.Time) *dynamodb.UpdateItemInput {
	at := d.At
	names := map[string]string{
		"#d": attrDelivery, "#lo": attrLeaseOwner, "#lu": attrLeaseUntil, "#dv": attrVersion,
		"#since": attrSince, "#na": attrNextAt, "#audit": attrAudit, "#reason": attrReason,
		"#attn": attrLegacyAttention, "#attnat": attrLegacyAttentionAt, "#ash": attrAttention, "#adue": attrAttentionDue,
	}
	values := map[string]types.AttributeValue{
		":expect": strAV(string(s.Expect)), ":to": strAV(string(s.As.To())), ":now": msAV(at),
		":none": strAV(""), ":zero": numAV(0), ":one": numAV(1),
		":empty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		":entry": &types.AttributeValueMemberL{Value: []types.AttributeValue{auditEntry(d)}},
	}
	// No lease recorded: an attempt that holds one is judged live by its
	// owner (the worker, whose Finish clears it, or the sweep, which takes
	// over an ended one), never by the operator's clock.
	state := "#d = :expect"
	if s.Expect == delivery.Queued {
		// A new ticket's delivery is queued by the absence of its state.
		state, names["#att"] = queuedCondition(":expect"), attrAttempts
	}
	cond := state + " AND (attribute_not_exists(#lo) OR #lo = :none)"
	if s.Version != 0 {
		cond += " AND #dv = :version"
		values[":version"] = numAV(s.Version)
	}
	set := []string{
		"#d = :to", "#lo = :none", "#lu = :zero", "#dv = if_not_exists(#dv, :zero) + :one", "#since = :now",
		"#audit = list_append(if_not_exists(#audit, :empty), :entry)",
	}
	var remove []string
	if s.Reason != "" {
		values[":reason"] = strAV(s.Reason)
		set = append(set, "#reason = :reason")
	} else {
		// The reason stored describes the state it came with (a refusal's
		// words); the new state has none.
		remove = append(remove, "#reason")
	}
	switch s.As {
	case SettleDelivered:
		names["#did"], names["#durl"], names["#dat"] = attrDestID, attrDestURL, attrDeliveredAt
		values[":did"], values[":durl"] = strAV(s.Receipt.ID), strAV(s.Receipt.URL)
		set = append(set, "#na = :zero", "#did = :did", "#durl = :durl", "#dat = :now")
		remove = append(remove, "#ash", "#adue", "#attn", "#attnat")
	case SettleNotCreated:
		// Not before the last request that may have created the ticket
		// can no longer be running at the helpdesk, nor its ticket missing
		// from the helpdesk's search (SafeAfter), by the store's clock.
		names["#sa"], values[":safe"] = attrSafeAfter, msAV(now)
		cond += " AND (attribute_not_exists(#sa) OR #sa <= :safe)"
		names["#ms"], names["#att"] = attrMaybeSent, attrAttempts
		values[":false"] = boolAV(false)
		values[":ash"], values[":adue"] = strAV(shardKey(delivery.Queued, attentionShard(s.TicketID))), strAV(dueKey(at, s.TicketID))
		set = append(set, "#ms = :false", "#att = :zero", "#na = :now", "#ash = :ash", "#adue = :adue")
		remove = append(remove, "#attn", "#attnat")
	case SettleAbandoned:
		set = append(set, "#na = :zero")
		remove = append(remove, "#ash", "#adue", "#attn", "#attnat")
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: ticketKey(s.TicketID),
		ConditionExpression:                 aws.String(cond),
		UpdateExpression:                    aws.String(expr),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// decision is the settlement made at at, as its audit entry records it.
func (s *Settlement) decision(at time.Time) delivery.Decision {
	d := delivery.Decision{Actor: s.Actor, At: at, Action: s.As.Action(), Reason: s.Reason, From: s.Expect, To: s.As.To(), Receipt: s.Receipt}
	if s.As == SettleNotCreated {
		d.Note = NotCreatedNote
	}
	return d
}

// auditEntry is decision d as the item's audit list holds it; decodeDelivery
// reads every field back as it was, so that its proof (d.Proof, when it
// has one) checks against what is read.
func auditEntry(d delivery.Decision) types.AttributeValue {
	m := map[string]types.AttributeValue{
		"who": strAV(d.Who), "at": msAV(d.At), "action": strAV(d.Action),
		"from": strAV(string(d.From)), "to": strAV(string(d.To)), "verified": boolAV(d.Verified),
	}
	for k, v := range map[string]string{
		"via": d.Via, "source_identity": d.SourceIdentity, "operator": d.Operator,
		"reason": d.Reason, "dest_id": d.Receipt.ID, "dest_url": d.Receipt.URL, "note": d.Note,
	} {
		if v != "" {
			m[k] = strAV(v)
		}
	}
	if len(d.Proof) > 0 {
		m[attrProof] = &types.AttributeValueMemberB{Value: d.Proof}
	}
	return &types.AttributeValueMemberM{Value: m}
}

// attrProof is an audit entry's proof (delivery.Decision.Proof).
const attrProof = "proof"

// settleRefused explains a failed settlement from the item as it was when
// the condition failed (read again when the store did not return it). A
// decision found made (Settlement.made) is this one, applied by an
// earlier try whose answer was lost: it is returned as made.
func (a *Admin) settleRefused(ctx context.Context, item map[string]types.AttributeValue, s Settlement, now time.Time) (delivery.Record, error) {
	if len(item) == 0 {
		got, err := a.store.get(ctx, ticketKey(s.TicketID))
		if err != nil {
			return delivery.Record{}, err
		}
		item = got
	}
	r, err := settleable(item)
	if err != nil {
		return delivery.Record{}, err
	}
	if s.made(r) {
		return *r, nil
	}
	return delivery.Record{}, &SettleConflictError{Current: *r, At: now}
}
