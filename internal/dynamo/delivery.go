package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/ticket"
)

// The outbox: a ticket item written with a destination configured carries
// its delivery state in these attributes. Times are unix milliseconds.
const (
	attrDelivery    = "delivery"
	attrDest        = "dest"
	attrDestKey     = "dkey"
	attrAttempts    = "attempts"
	attrLeaseOwner  = "lease_owner"
	attrLeaseUntil  = "lease_until"
	attrMaybeSent   = "maybe_sent"
	attrFirstSent   = "first_sent"
	attrLastSent    = "last_sent"
	attrNextAt      = "next_at"
	attrSince       = "since"
	attrLastCode    = "last_code"
	attrLastStatus  = "last_status"
	attrReason      = "reason"
	attrDestID      = "dest_id"
	attrDestURL     = "dest_url"
	attrDeliveredAt = "delivered_at"
	attrVersion     = "dver"
	attrAudit       = "audit"
	// The lease a Lease replaced, and the owner whose Finish was the last
	// applied: they let a write sent again after its answer was lost
	// recognize its own effect.
	attrPrevLeaseOwner = "prev_lease_owner"
	attrPrevLeaseUntil = "prev_lease_until"
	attrFinishedBy     = "finished_by"
	attrSafeAfter      = "safe_after"
	// The owner of the lease whose attempt was about to send a create
	// (Sending), until its result is recorded; and the mark as it was
	// when the last lease was taken, or delivery.SendingUnknown where no
	// version that marks had leased the delivery before (the lease it
	// replaced, if any, was an earlier version's, which never marked).
	attrSending     = "sending"
	attrPrevSending = "prev_sending"
)

// WorkerAttributes returns the attributes the delivery worker's updates
// (Lease, Finish, Defer) name, sorted: the partition key, the delivery's
// own state and the attention index's keys. Never the ticket's content,
// its destination or lookup keys, nor the audit of people's decisions
// (attrAudit): the worker's role limits its UpdateItem to these
// (dynamodb:Attributes, template.yaml), so that only the settle path's
// permissions can write a decision's record.
func WorkerAttributes() []string {
	a := []string{
		PartitionKey, attrDelivery, attrAttempts, attrLeaseOwner, attrLeaseUntil, attrMaybeSent,
		attrFirstSent, attrLastSent, attrNextAt, attrSince, attrLastCode, attrLastStatus, attrReason,
		attrDestID, attrDestURL, attrDeliveredAt, attrVersion, attrPrevLeaseOwner, attrPrevLeaseUntil,
		attrFinishedBy, attrSafeAfter, attrSending, attrPrevSending, attrAttention, attrAttentionDue, attrLegacyAttention, attrLegacyAttentionAt,
	}
	slices.Sort(a)
	return a
}

// indexTimeLayout writes times as strings of one width, so that their order
// as strings is their order in time (an index sort key of type S orders them
// as strings).
const indexTimeLayout = "2006-01-02T15:04:05.000000000Z"

func indexTime(t time.Time) string { return t.UTC().Format(indexTimeLayout) }

func msAV(t time.Time) types.AttributeValue {
	if t.IsZero() {
		return numAV(0)
	}
	return numAV(t.UnixMilli())
}

func boolAV(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

// inAttention returns the attention index entry of r: the state it is
// listed under, or "" when it is not listed.
func inAttention(r *delivery.Record) delivery.State {
	switch {
	case r.State == delivery.Queued && !r.NextAt.IsZero():
		return delivery.Queued
	case r.State.NeedsPerson():
		return r.State
	}
	return ""
}

// queuedCondition is the condition that a ticket's delivery is queued
// (#d = attrDelivery, #att = attrAttempts, queued the placeholder of
// delivery.Queued's value): in the state attribute, or, for a new ticket,
// by its absence beside the attempt count, which marks every ticket that
// has a delivery (addDelivery, decodeDelivery). The create never writes
// the state: the callback's role may not name it (CreateAttributes), so
// that the internet-facing function can neither queue again a delivery
// that has moved on nor erase one (a REMOVE names the attribute too). The
// first attempt's result (Finish) writes it.
func queuedCondition(queued string) string {
	return "(#d = " + queued + " OR (attribute_not_exists(#d) AND attribute_exists(#att)))"
}

// addDelivery writes the delivery of a new ticket into its item: queued by
// the absence of its state (queuedCondition).
func addDelivery(item map[string]types.AttributeValue, r *delivery.Record) {
	item[attrDest] = strAV(r.Destination)
	item[attrDestKey] = strAV(r.Key)
	item[attrAttempts] = numAV(int64(r.Attempts))
	item[attrSince] = msAV(r.Since)
	item[attrVersion] = numAV(r.Version)
	if shard, key, ok := attentionEntry(ticketIDOf(item), r); ok {
		item[attrAttention] = strAV(shard)
		item[attrAttentionDue] = strAV(key)
		item[attrNextAt] = msAV(r.NextAt)
	}
}

func (d *decoder) ms(name string) time.Time {
	n := d.num(name)
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func (d *decoder) num(name string) int64 {
	switch v := d.item[name].(type) {
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("dynamo: %s is not an integer", name)
		}
		return n
	case nil:
		return 0
	default:
		if d.err == nil {
			d.err = fmt.Errorf("dynamo: %s is not a number", name)
		}
		return 0
	}
}

func (d *decoder) boolean(name string) bool {
	b, _ := d.item[name].(*types.AttributeValueMemberBOOL)
	return b != nil && b.Value
}

// decodeDelivery reads the delivery of a ticket item; nil when the ticket
// has none (it was created without a destination: neither a state nor an
// attempt count).
func decodeDelivery(item map[string]types.AttributeValue) (*delivery.Record, error) {
	_, hasState := item[attrDelivery]
	if _, ok := item[attrAttempts]; !ok && !hasState {
		return nil, nil
	}
	d := decoder{item: item}
	state := delivery.Queued // a new ticket's, by its absence (queuedCondition)
	if hasState {
		state = delivery.State(d.str(attrDelivery, true))
	}
	r := &delivery.Record{
		State:       state,
		Destination: d.str(attrDest, false),
		Key:         d.str(attrDestKey, false),
		Attempts:    int(d.num(attrAttempts)),
		LeaseOwner:  d.str(attrLeaseOwner, false),
		LeaseUntil:  d.ms(attrLeaseUntil),
		MaybeSent:   d.boolean(attrMaybeSent),
		FirstSent:   d.ms(attrFirstSent),
		LastSent:    d.ms(attrLastSent),
		NextAt:      d.ms(attrNextAt),
		SafeAfter:   d.ms(attrSafeAfter),
		Sending:     d.str(attrSending, false),
		Since:       d.ms(attrSince),
		LastCode:    d.str(attrLastCode, false),
		LastStatus:  int(d.num(attrLastStatus)),
		Reason:      d.str(attrReason, false),
		Receipt:     delivery.Receipt{ID: d.str(attrDestID, false), URL: d.str(attrDestURL, false)},
		DeliveredAt: d.ms(attrDeliveredAt),
		Version:     d.num(attrVersion),
	}
	if l, ok := item[attrAudit].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			m, ok := e.(*types.AttributeValueMemberM)
			if !ok {
				continue
			}
			ad := decoder{item: m.Value}
			r.Audit = append(r.Audit, delivery.Decision{
				Actor: delivery.Actor{
					Who: ad.str("who", false), Via: ad.str("via", false), Verified: ad.boolean("verified"),
					SourceIdentity: ad.str("source_identity", false), Operator: ad.str("operator", false),
				},
				At: ad.ms("at"), Action: ad.str("action", false),
				Reason: ad.str("reason", false), From: delivery.State(ad.str("from", false)),
				To:      delivery.State(ad.str("to", false)),
				Receipt: delivery.Receipt{ID: ad.str("dest_id", false), URL: ad.str("dest_url", false)},
				Note:    ad.str("note", false),
				Proof:   binaryOf(m.Value[attrProof]),
			})
		}
	}
	if d.err == nil && !r.State.Valid() {
		d.err = fmt.Errorf("dynamo: ticket has delivery state %q", r.State)
	}
	return r, d.err
}

// Lease implements delivery.Store: one conditional UpdateItem that returns
// nothing, then a consistent GetItem of the leased ticket, from which the
// delivery as it was before is rebuilt (ownLease); when the condition
// fails, the reason with the item DynamoDB returns beside the failure.
// When the update failed (its answers may all have been lost after it
// applied), the same read says whether the lease is this attempt's; when
// the read fails, the lease is given back (release): an attempt that sent
// nothing is never left holding a lease that the next one would count as
// maybe sent.
// The update returns no values (ReturnValues NONE, said explicitly) so
// that the worker's role can limit its UpdateItem to the delivery's own
// attributes (dynamodb:Attributes): a request for ALL_OLD needs all of the
// item's.
func (s *Store) Lease(ctx context.Context, id string, l delivery.Lease) (ticket.Ticket, delivery.Record, error) {
	owner, now, until := l.Owner, l.From, l.Until
	in := &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       ticketKey(id),
		// Due; or never attempted (a new ticket's next_at is when the
		// sweep may take it up should the stream not, StreamGrace later,
		// not a bar to the stream's first attempt); or left by an attempt
		// whose lease ended without a result (its worker died): taken
		// over at once, as maybe sent.
		ConditionExpression: aws.String(queuedCondition(":queued") + " AND (attribute_not_exists(#lu) OR #lu < :now) AND " +
			"(attribute_not_exists(#na) OR #na <= :now OR #att = :zero OR (attribute_exists(#lo) AND #lo <> :none))"),
		// The state a new ticket lacks stays absent (queuedCondition)
		// until the attempt's result writes it: the state is projected
		// into the attention index, and writing it here would cost an
		// index write per first attempt.
		UpdateExpression: aws.String("SET #plo = if_not_exists(#lo, :none), #plu = if_not_exists(#lu, :zero), " +
			"#psnd = if_not_exists(#snd, :unknown), #snd = if_not_exists(#snd, :none), " +
			"#lo = :owner, #lu = :until, #att = if_not_exists(#att, :zero) + :one, #fs = if_not_exists(#fs, :now), #dv = if_not_exists(#dv, :zero) + :one"),
		ExpressionAttributeNames: map[string]string{
			"#d": attrDelivery, "#lu": attrLeaseUntil, "#na": attrNextAt, "#lo": attrLeaseOwner,
			"#att": attrAttempts, "#fs": attrFirstSent, "#dv": attrVersion,
			"#plo": attrPrevLeaseOwner, "#plu": attrPrevLeaseUntil, "#snd": attrSending, "#psnd": attrPrevSending,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":queued": strAV(string(delivery.Queued)), ":now": msAV(now), ":until": msAV(until),
			":owner": strAV(owner), ":zero": numAV(0), ":one": numAV(1), ":none": strAV(""),
			":unknown": strAV(delivery.SendingUnknown),
		},
		ReturnValues:                        types.ReturnValueNone,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	err := s.retry(ctx, func() error {
		_, err := s.api.UpdateItem(ctx, in)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if t, r, ok := ownLease(ccf.Item, owner); ok {
			// This very lease applied and its answer was lost; the
			// store's retry met it. The lease is ours.
			return t, r, nil
		}
		return ticket.Ticket{}, delivery.Record{}, s.notLeasable(ctx, ccf.Item, id)
	}
	// Applied or not, the read says (when the update failed, it may have
	// applied with every answer lost): the lease is this attempt's when
	// the item holds its owner.
	item, gerr := s.get(ctx, ticketKey(id))
	switch {
	case gerr != nil:
		// Nothing was sent: a lease that may hold the delivery is given
		// back, so that it is never taken for an attempt that may have
		// sent.
		return ticket.Ticket{}, delivery.Record{}, errors.Join(firstErr(err, gerr), s.release(ctx, id, owner))
	case err != nil:
		if t, r, ok := ownLease(item, owner); ok {
			return t, r, nil
		}
		return ticket.Ticket{}, delivery.Record{}, err // not applied
	}
	if t, r, ok := ownLease(item, owner); ok {
		return t, r, nil
	}
	// The lease applied but the item read does not hold it (deleted, or
	// not decodable): refused, and nothing is sent.
	return ticket.Ticket{}, delivery.Record{}, s.notLeasable(ctx, item, id)
}

// firstErr is the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ReleaseTimeout bounds the release of a lease the worker could not
// confirm, whatever time the attempt's own context has left.
const ReleaseTimeout = 5 * time.Second

// release gives back owner's lease of ticket id, if it holds the delivery:
// the lease it replaced comes back (an earlier attempt that died holding
// one still counts as one that may have sent), and the attempt it counted
// is taken back. One UpdateItem conditional on owner: when the lease never
// applied, or a retry meets the release's own effect, the condition fails
// and nothing is left to give back.
func (s *Store) release(ctx context.Context, id, owner string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	err := s.retry(ctx, func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: ticketKey(id),
			ConditionExpression: aws.String("#lo = :owner"),
			UpdateExpression:    aws.String("SET #lo = #plo, #lu = #plu, #snd = #psnd, #att = #att - :one, #dv = #dv + :one"),
			ExpressionAttributeNames: map[string]string{
				"#lo": attrLeaseOwner, "#lu": attrLeaseUntil, "#plo": attrPrevLeaseOwner, "#plu": attrPrevLeaseUntil,
				"#snd": attrSending, "#psnd": attrPrevSending, "#att": attrAttempts, "#dv": attrVersion,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{":owner": strAV(owner), ":one": numAV(1)},
			ReturnValues:              types.ReturnValueNone,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: the unconfirmed lease was not given back (it ends at its time and is then taken over as an attempt that may have sent): %w", err)
	}
	return nil
}

// ownLease recognizes, in an item read or returned with a failed lease
// condition, the lease owner took (owners are unique per attempt, so the
// owner is the lease's identity, whatever the clocks): the item as it is
// then holds that lease, and the delivery as it was before is rebuilt
// from it and the lease it replaced, which the lease recorded.
func ownLease(item map[string]types.AttributeValue, owner string) (ticket.Ticket, delivery.Record, bool) {
	d := &decoder{item: item}
	if len(item) == 0 || d.str(attrLeaseOwner, false) != owner {
		return ticket.Ticket{}, delivery.Record{}, false
	}
	t, err := decodeTicket(item)
	if err != nil {
		return ticket.Ticket{}, delivery.Record{}, false
	}
	r, err := decodeDelivery(item)
	if err != nil || r == nil {
		return ticket.Ticket{}, delivery.Record{}, false
	}
	r.LeaseOwner, r.LeaseUntil = d.str(attrPrevLeaseOwner, false), d.ms(attrPrevLeaseUntil)
	r.Sending = d.str(attrPrevSending, false)
	r.Attempts--
	r.Version--
	if d.err != nil {
		return ticket.Ticket{}, delivery.Record{}, false
	}
	return t, *r, true
}

// notLeasable builds Lease's refusal from the item returned with the failed
// condition, reading it when the store did not return it.
func (s *Store) notLeasable(ctx context.Context, item map[string]types.AttributeValue, id string) error {
	if len(item) == 0 {
		got, err := s.get(ctx, ticketKey(id))
		if err != nil {
			return err
		}
		item = got
	}
	if len(item) == 0 {
		return &delivery.NotLeasableError{}
	}
	r, err := decodeDelivery(item)
	if err != nil {
		return err
	}
	nl := &delivery.NotLeasableError{Found: true}
	if r != nil {
		nl.Record = *r
	}
	return nl
}

// Finish implements delivery.Store: one UpdateItem conditional on owner's
// lease, which also moves the ticket into or out of the attention index.
func (s *Store) Finish(ctx context.Context, id, owner string, r delivery.Record) error {
	names := map[string]string{
		"#d": attrDelivery, "#lo": attrLeaseOwner, "#lu": attrLeaseUntil, "#ms": attrMaybeSent,
		"#ls": attrLastSent, "#na": attrNextAt, "#since": attrSince, "#lc": attrLastCode,
		"#lst": attrLastStatus, "#dv": attrVersion,
	}
	values := map[string]types.AttributeValue{
		":owner": strAV(owner), ":state": strAV(string(r.State)), ":none": strAV(""), ":zero": numAV(0),
		":ms": boolAV(r.MaybeSent), ":ls": msAV(r.LastSent), ":na": msAV(r.NextAt), ":since": msAV(r.Since),
		":lc": strAV(r.LastCode), ":lst": numAV(int64(r.LastStatus)), ":one": numAV(1),
	}
	names["#fb"] = attrFinishedBy
	names["#sa"], values[":sa"] = attrSafeAfter, msAV(r.SafeAfter)
	names["#snd"] = attrSending
	set := "SET #d = :state, #lo = :none, #lu = :zero, #snd = :none, #fb = :owner, #ms = :ms, #ls = :ls, #na = :na, #sa = :sa, #since = :since, #lc = :lc, #lst = :lst, #dv = #dv + :one"
	if r.Reason != "" {
		names["#reason"], values[":reason"] = attrReason, strAV(r.Reason)
		set += ", #reason = :reason"
	}
	if r.State == delivery.Delivered {
		names["#did"], names["#durl"], names["#dat"] = attrDestID, attrDestURL, attrDeliveredAt
		values[":did"], values[":durl"], values[":dat"] = strAV(r.Receipt.ID), strAV(r.Receipt.URL), msAV(r.DeliveredAt)
		set += ", #did = :did, #durl = :durl, #dat = :dat"
	}
	expr := set + attentionUpdate(id, &r, names, values)
	err := s.retry(ctx, func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: ticketKey(id),
			ConditionExpression:                 aws.String("#lo = :owner"),
			UpdateExpression:                    aws.String(expr),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueNone,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		d := &decoder{item: ccf.Item}
		if d.str(attrFinishedBy, false) == owner && d.str(attrLeaseOwner, false) == "" {
			// This very Finish applied and its answer was lost; the
			// store's retry met it, and no lease was taken since.
			return nil
		}
		return delivery.ErrLeaseLost
	}
	return err
}

// Sending implements delivery.Store: one UpdateItem conditional on owner's
// lease that names owner in the mark (on) or clears a mark naming owner
// (off: within ReleaseTimeout, whatever time ctx has left, as release).
// Sent again after a lost answer, it meets its own effect and applies it
// once more, which changes nothing. It leaves the version (dver): the mark
// is the leased attempt's own, inside a lease that already changed it,
// and the attempt's result changes it again; an operator reads nothing
// from the mark.
func (s *Store) Sending(ctx context.Context, id, owner string, on bool) error {
	if !on {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
		defer cancel()
	}
	names := map[string]string{"#snd": attrSending}
	values := map[string]types.AttributeValue{":owner": strAV(owner)}
	cond, set := "#snd = :owner", "SET #snd = :none"
	if on {
		names["#lo"] = attrLeaseOwner
		cond, set = "#lo = :owner", "SET #snd = :owner"
	} else {
		values[":none"] = strAV("")
	}
	err := s.retry(ctx, func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: ticketKey(id),
			ConditionExpression:       aws.String(cond),
			UpdateExpression:          aws.String(set),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ReturnValues:              types.ReturnValueNone,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf) && on:
		return delivery.ErrLeaseLost
	case errors.As(err, &ccf):
		return nil // no mark of owner's: nothing to clear
	}
	return err
}

// Defer implements delivery.Store.
func (s *Store) Defer(ctx context.Context, id, owner string, at time.Time) error {
	err := s.retry(ctx, func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: ticketKey(id),
			ConditionExpression: aws.String(queuedCondition(":queued") + " AND #lo = :owner"),
			UpdateExpression:    aws.String("SET #na = :at, #ash = :ash, #adue = :adue, #dv = #dv + :one REMOVE #attn, #attnat"),
			ExpressionAttributeNames: map[string]string{
				"#d": attrDelivery, "#att": attrAttempts, "#lo": attrLeaseOwner, "#na": attrNextAt,
				"#ash": attrAttention, "#adue": attrAttentionDue, "#dv": attrVersion,
				"#attn": attrLegacyAttention, "#attnat": attrLegacyAttentionAt,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":queued": strAV(string(delivery.Queued)), ":owner": strAV(owner), ":at": msAV(at),
				":ash": strAV(shardKey(delivery.Queued, attentionShard(id))), ":adue": strAV(dueKey(at, id)), ":one": numAV(1),
			},
			ReturnValues: types.ReturnValueNone,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return delivery.ErrLeaseLost
	}
	return err
}

// Delivery reads the delivery of ticket id; nil when the ticket has none or
// does not exist.
func (s *Store) Delivery(ctx context.Context, id string) (*delivery.Record, error) {
	item, err := s.get(ctx, ticketKey(id))
	if err != nil || item == nil {
		return nil, err
	}
	return decodeDelivery(item)
}

func ticketIDOf(item map[string]types.AttributeValue) string {
	k, ok := item[PartitionKey].(*types.AttributeValueMemberS)
	if !ok || len(k.Value) <= len(ticketPrefix) || k.Value[:len(ticketPrefix)] != ticketPrefix {
		return ""
	}
	return k.Value[len(ticketPrefix):]
}

// A cursor is a page's LastEvaluatedKey, which for an index query holds only
// string attributes, as base64 of JSON.
func encodeCursor(key map[string]types.AttributeValue) (string, error) {
	if len(key) == 0 {
		return "", nil
	}
	m := make(map[string]string, len(key))
	for k, v := range key {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("dynamo: page key %s is not a string", k)
		}
		m[k] = s.Value
	}
	b, err := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b), err
}

// ErrBadCursor is returned for a page cursor this package did not make.
var ErrBadCursor = errors.New("dynamo: malformed page cursor")

func decodeCursor(c string) (map[string]types.AttributeValue, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, ErrBadCursor
	}
	var m map[string]string
	if json.Unmarshal(b, &m) != nil || len(m) == 0 {
		return nil, ErrBadCursor
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = strAV(v)
	}
	return out, nil
}

// binaryOf is the bytes of a binary attribute value, nil for any other.
func binaryOf(v types.AttributeValue) []byte {
	if b, ok := v.(*types.AttributeValueMemberB); ok {
		return b.Value
	}
	return nil
}
