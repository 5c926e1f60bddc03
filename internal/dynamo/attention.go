package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Limits of Admin.Deliveries.
const (
	// MaxListDeliveries bounds the deliveries one Deliveries call returns.
	MaxListDeliveries = 1000
	// MaxDeliveriesExamined bounds the index entries one Deliveries call
	// reads. A tenant filter that matches few of many entries stops there
	// with a cursor, so that one command never reads a whole state.
	MaxDeliveriesExamined = 10000
)

// Listed are the states AttentionIndex lists: a queued ticket only once a
// retry is scheduled (a first attempt comes from the stream and is never
// listed).
var Listed = []delivery.State{delivery.Uncertain, delivery.Failed, delivery.Queued}

// DeliveryQuery selects the deliveries Admin.Deliveries lists.
type DeliveryQuery struct {
	// State is one of Listed.
	State delivery.State
	// EnteredBefore, when not zero, lists only deliveries that entered
	// State at or before it (older than a given age).
	EnteredBefore time.Time
	// Tenant, when not empty, lists only that tenant's tickets.
	Tenant string
	// Limit is how many to list, 1 to MaxListDeliveries.
	Limit int
	// After is the cursor a previous page returned ("" for the first).
	After string
}

// ListedDelivery is one ticket Admin.Deliveries lists.
type ListedDelivery struct {
	TicketID string
	// Entered is when the ticket entered the state, as the index lists it
	// (its sort key).
	Entered time.Time
	// Ticket and Delivery are the item as a consistent read finds it.
	Ticket   ticket.Ticket
	Delivery delivery.Record
}

// DeliveryPage is one page of Admin.Deliveries.
type DeliveryPage struct {
	// Deliveries are oldest first (by when they entered the state).
	Deliveries []ListedDelivery
	// Next is the After of the next page; empty on the last.
	Next string
	// Examined counts the index entries read; Stale counts those the
	// table no longer bears out (settled or moved since the index, which
	// is eventually consistent, saw them), which are left out.
	Examined, Stale int
}

// Deliveries lists the tickets whose delivery is in q.State, oldest first,
// by a Query of AttentionIndex (never a scan): the key condition picks the
// state and, with q.EnteredBefore, the age; q.Tenant is a filter on the
// index's projected tenant_id. The tickets found are read with strongly
// consistent reads, and an entry whose ticket has left the state since is
// left out. A page ends after q.Limit deliveries, or after
// MaxDeliveriesExamined index entries, with a cursor for the next.
func (a *Admin) Deliveries(ctx context.Context, q DeliveryQuery) (DeliveryPage, error) {
	switch {
	case !slices.Contains(Listed, q.State):
		return DeliveryPage{}, fmt.Errorf("dynamo: %q deliveries are not listed (only uncertain, failed and queued)", q.State)
	case q.Limit < 1 || q.Limit > MaxListDeliveries:
		return DeliveryPage{}, fmt.Errorf("dynamo: list limit %d is outside 1 to %d", q.Limit, MaxListDeliveries)
	}
	start, err := attentionCursor(q.After, q.State)
	if err != nil {
		return DeliveryPage{}, err
	}
	cond := "#attn = :s"
	names := map[string]string{"#attn": attrAttention}
	values := map[string]types.AttributeValue{":s": strAV(string(q.State))}
	if !q.EnteredBefore.IsZero() {
		cond += " AND #at <= :before"
		names["#at"], values[":before"] = attrAttentionAt, strAV(indexTime(q.EnteredBefore))
	}
	var filter *string
	if q.Tenant != "" {
		filter = aws.String("#tenant = :tenant")
		names["#tenant"], values[":tenant"] = attrTenant, strAV(q.Tenant)
	}
	var page DeliveryPage
	var entries []map[string]types.AttributeValue
	for {
		limit := int(a.pageSize)
		if filter == nil {
			limit = min(limit, q.Limit-len(entries))
		}
		in := &dynamodb.QueryInput{
			TableName: &a.table, IndexName: aws.String(AttentionIndex),
			KeyConditionExpression: aws.String(cond), FilterExpression: filter,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ExclusiveStartKey: start,
			Limit:             aws.Int32(int32(limit)), // #nosec G115 -- at most MaxListDeliveries or the page size
		}
		var out *dynamodb.QueryOutput
		err := a.store.retry(ctx, func() (err error) {
			out, err = a.api.Query(ctx, in)
			return err
		})
		if err != nil {
			return DeliveryPage{}, err
		}
		// A store that does not report ScannedCount still counts what it
		// returned.
		page.Examined += max(int(out.ScannedCount), len(out.Items))
		for i, item := range out.Items {
			entries = append(entries, item)
			if len(entries) == q.Limit {
				if i < len(out.Items)-1 || len(out.LastEvaluatedKey) > 0 {
					if page.Next, err = encodeCursor(indexKeyOf(item)); err != nil {
						return DeliveryPage{}, err
					}
				}
				return a.readListed(ctx, q.State, entries, page)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return a.readListed(ctx, q.State, entries, page)
		}
		start = out.LastEvaluatedKey
		if page.Examined >= MaxDeliveriesExamined {
			if page.Next, err = encodeCursor(start); err != nil {
				return DeliveryPage{}, err
			}
			return a.readListed(ctx, q.State, entries, page)
		}
	}
}

// indexKeyOf is the position of an AttentionIndex entry, as a Query's
// ExclusiveStartKey names it: the table key and the index key.
func indexKeyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		PartitionKey: item[PartitionKey], attrAttention: item[attrAttention], attrAttentionAt: item[attrAttentionAt],
	}
}

// attentionCursor decodes a Deliveries cursor, refusing one that is not a
// position in state's part of AttentionIndex (DynamoDB would refuse it
// less clearly).
func attentionCursor(c string, state delivery.State) (map[string]types.AttributeValue, error) {
	key, err := decodeCursor(c)
	if err != nil || key == nil {
		return key, err
	}
	if len(key) != 3 {
		return nil, ErrBadCursor
	}
	pkv, _ := key[PartitionKey].(*types.AttributeValueMemberS)
	attn, _ := key[attrAttention].(*types.AttributeValueMemberS)
	at, _ := key[attrAttentionAt].(*types.AttributeValueMemberS)
	if pkv == nil || attn == nil || at == nil || !strings.HasPrefix(pkv.Value, ticketPrefix) || attn.Value != string(state) {
		return nil, ErrBadCursor
	}
	if _, err := time.Parse(indexTimeLayout, at.Value); err != nil {
		return nil, ErrBadCursor
	}
	return key, nil
}

// readListed reads the tickets of entries with consistent reads and adds
// to page those still in state, in the entries' order.
func (a *Admin) readListed(ctx context.Context, state delivery.State, entries []map[string]types.AttributeValue, page DeliveryPage) (DeliveryPage, error) {
	keys := make([]string, 0, len(entries))
	entered := make(map[string]time.Time, len(entries))
	for _, e := range entries {
		k, ok := e[PartitionKey].(*types.AttributeValueMemberS)
		if !ok {
			return DeliveryPage{}, fmt.Errorf("dynamo: %s entry without %s", AttentionIndex, PartitionKey)
		}
		keys = append(keys, k.Value)
		if at, ok := e[attrAttentionAt].(*types.AttributeValueMemberS); ok {
			entered[k.Value], _ = time.Parse(indexTimeLayout, at.Value)
		}
	}
	items, err := a.batchGet(ctx, keys)
	if err != nil {
		return DeliveryPage{}, err
	}
	page.Deliveries = make([]ListedDelivery, 0, len(keys))
	for _, k := range keys {
		item, ok := items[k]
		if !ok {
			page.Stale++
			continue
		}
		t, err := decodeTicket(item)
		if err != nil {
			return DeliveryPage{}, err
		}
		d, err := decodeDelivery(item)
		if err != nil {
			return DeliveryPage{}, err
		}
		if d == nil || inAttention(d) != state {
			page.Stale++
			continue
		}
		page.Deliveries = append(page.Deliveries, ListedDelivery{TicketID: t.ID, Entered: entered[k], Ticket: t, Delivery: *d})
	}
	return page, nil
}
