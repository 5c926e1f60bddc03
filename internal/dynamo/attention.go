package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
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

// Listed are the states AttentionIndex lists: a queued ticket from its
// creation (due once the stream's grace is over, for a first attempt the
// stream never made) and while a retry is scheduled.
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
	// Entered is when the ticket entered the state, as the index shows it
	// (its projected since).
	Entered time.Time
	// Ticket and Delivery are the item as a consistent read finds it.
	Ticket   ticket.Ticket
	Delivery delivery.Record
}

// DeliveryPage is one page of Admin.Deliveries.
type DeliveryPage struct {
	// Deliveries are in the state's order (see Admin.Deliveries).
	Deliveries []ListedDelivery
	// Next is the After of the next page; empty on the last.
	Next string
	// Examined counts the index entries read; Stale counts those the
	// table no longer bears out (settled or moved since the index, which
	// is eventually consistent, saw them), which are left out.
	Examined, Stale int
}

// Deliveries lists the tickets whose delivery is in q.State, in the order
// of AttentionIndex (uncertain and failed: oldest first, by when they
// entered the state; queued: by next attempt, soonest first), by Queries
// of each of the state's shards (never a scan), merged. For uncertain and
// failed the key condition also picks the age (q.EnteredBefore); for
// queued the age, and q.Tenant for every state, are filters on the
// index's projected since and tenant_id. The tickets found are read with
// strongly consistent reads, and an entry whose ticket has left the state
// since is left out. A page ends after q.Limit deliveries, or after
// MaxDeliveriesExamined index entries, with a cursor for the next: one
// position in the state's order, which resumes every shard after it.
func (a *Admin) Deliveries(ctx context.Context, q DeliveryQuery) (DeliveryPage, error) {
	switch {
	case !slices.Contains(Listed, q.State):
		return DeliveryPage{}, fmt.Errorf("dynamo: %q deliveries are not listed (only uncertain, failed and queued)", q.State)
	case q.Limit < 1 || q.Limit > MaxListDeliveries:
		return DeliveryPage{}, fmt.Errorf("dynamo: list limit %d is outside 1 to %d", q.Limit, MaxListDeliveries)
	}
	after, err := attentionCursor(q.After, q.State)
	if err != nil {
		return DeliveryPage{}, err
	}
	m := &merge{a: a, q: q, after: after}
	for n := range AttentionShards {
		m.shards = append(m.shards, &shardRead{key: shardKey(q.State, n), pos: after, more: true})
	}
	var page DeliveryPage
	var entries []map[string]types.AttributeValue
	last := ""
	for len(entries) < q.Limit {
		if err := m.fill(ctx, &page); err != nil {
			return DeliveryPage{}, err
		}
		if m.stopped {
			break
		}
		head := m.head()
		if head == nil {
			break
		}
		item := head.buf[0]
		head.buf = head.buf[1:]
		head.pos = dueKeyOf(item)
		last = head.pos
		entries = append(entries, item)
	}
	if page.Next, err = m.cursor(last); err != nil {
		return DeliveryPage{}, err
	}
	return a.readListed(ctx, q.State, entries, page)
}

// shardRead is one shard of a Deliveries merge: the entries read and not
// yet listed (buf, in order), whether the shard has more past them, where
// its next page starts, and pos, the position up to which every entry of
// the shard is listed or filtered out.
type shardRead struct {
	key   string
	buf   []map[string]types.AttributeValue
	more  bool
	start map[string]types.AttributeValue
	pos   string
}

// merge reads the shards of one Deliveries page.
type merge struct {
	a       *Admin
	q       DeliveryQuery
	after   string
	shards  []*shardRead
	stopped bool // MaxDeliveriesExamined reached
}

// fill reads a page of every shard whose buffer is empty and that has
// more, until each has an entry or none left, or until page has examined
// MaxDeliveriesExamined entries (m.stopped).
func (m *merge) fill(ctx context.Context, page *DeliveryPage) error {
	for _, sh := range m.shards {
		for len(sh.buf) == 0 && sh.more {
			if page.Examined >= MaxDeliveriesExamined {
				m.stopped = true
				return nil
			}
			items, err := m.read(ctx, sh, page)
			if err != nil {
				return err
			}
			sh.buf = items
		}
	}
	return nil
}

// read queries the next page of sh.
func (m *merge) read(ctx context.Context, sh *shardRead, page *DeliveryPage) ([]map[string]types.AttributeValue, error) {
	q := m.q
	cond := "#ash = :sh"
	names := map[string]string{"#ash": attrAttention}
	values := map[string]types.AttributeValue{":sh": strAV(sh.key)}
	var filters []string
	upper := ""
	if !q.EnteredBefore.IsZero() {
		if q.State == delivery.Queued {
			filters = append(filters, "#since <= :before")
			names["#since"], values[":before"] = attrSince, msAV(q.EnteredBefore)
		} else {
			upper = dueKeyEnd(q.EnteredBefore)
		}
	}
	switch {
	case m.after != "" && upper != "" && m.after >= upper:
		sh.more = false // resumes past the age asked for: nothing left
		return nil, nil
	case m.after != "" && upper != "":
		cond += " AND #adue BETWEEN :after AND :upper"
		values[":after"], values[":upper"] = strAV(m.after), strAV(upper)
	case m.after != "":
		cond += " AND #adue > :after"
		values[":after"] = strAV(m.after)
	case upper != "":
		cond += " AND #adue <= :upper"
		values[":upper"] = strAV(upper)
	}
	if strings.Contains(cond, "#adue") {
		names["#adue"] = attrAttentionDue
	}
	if q.Tenant != "" {
		filters = append(filters, "#tenant = :tenant")
		names["#tenant"], values[":tenant"] = attrTenant, strAV(q.Tenant)
	}
	var filter *string
	if len(filters) > 0 {
		filter = aws.String(strings.Join(filters, " AND "))
	}
	limit := int(m.a.pageSize)
	if filter == nil {
		// A page of one shard needs no more than its share, and one more
		// to know what follows.
		limit = min(limit, q.Limit/AttentionShards+2)
	}
	in := &dynamodb.QueryInput{
		TableName: &m.a.table, IndexName: aws.String(AttentionIndex),
		KeyConditionExpression: aws.String(cond), FilterExpression: filter,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ExclusiveStartKey: sh.start,
		Limit:             aws.Int32(int32(limit)), // #nosec G115 -- at most the page size
	}
	var out *dynamodb.QueryOutput
	err := m.a.store.retry(ctx, func() (err error) {
		out, err = m.a.api.Query(ctx, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A store that does not report ScannedCount still counts what it
	// returned.
	page.Examined += max(int(out.ScannedCount), len(out.Items))
	items := make([]map[string]types.AttributeValue, 0, len(out.Items))
	for _, it := range out.Items {
		if k := dueKeyOf(it); k != "" && k != m.after {
			items = append(items, it)
		}
	}
	sh.more, sh.start = len(out.LastEvaluatedKey) > 0, out.LastEvaluatedKey
	if len(items) == 0 && sh.more {
		// Everything up to the page's end is filtered out.
		if k, ok := out.LastEvaluatedKey[attrAttentionDue].(*types.AttributeValueMemberS); ok {
			sh.pos = k.Value
		}
	}
	return items, nil
}

// head is the shard whose first buffered entry comes first; nil when every
// shard is done.
func (m *merge) head() *shardRead {
	var best *shardRead
	for _, sh := range m.shards {
		if len(sh.buf) > 0 && (best == nil || dueKeyOf(sh.buf[0]) < dueKeyOf(best.buf[0])) {
			best = sh
		}
	}
	return best
}

// cursor is the position the next page resumes after, "" when no shard
// has anything left. last is the last position listed ("" for none):
// every shard holds nothing unlisted before it. Past it, a shard's pos
// says how far it is known to hold nothing to list, so the least pos of
// the shards not done is a position too, and the later of the two is
// taken.
func (m *merge) cursor(last string) (string, error) {
	pos, open := "", false
	for _, sh := range m.shards {
		if len(sh.buf) == 0 && !sh.more {
			continue
		}
		if !open || sh.pos < pos {
			pos = sh.pos
		}
		open = true
	}
	if !open {
		return "", nil
	}
	pos = max(pos, last, m.after)
	if pos == "" {
		return "", nil
	}
	return encodeAttentionCursor(m.q.State, pos)
}

// dueKeyOf is the AttentionIndex position of an entry, "" without one.
func dueKeyOf(item map[string]types.AttributeValue) string {
	k, _ := item[attrAttentionDue].(*types.AttributeValueMemberS)
	if k == nil {
		return ""
	}
	return k.Value
}

// A Deliveries cursor is the state and a position in it, as base64 of
// JSON.
type listCursor struct {
	State string `json:"s"`
	After string `json:"a"`
}

func encodeAttentionCursor(st delivery.State, after string) (string, error) {
	b, err := json.Marshal(listCursor{State: string(st), After: after})
	return base64.RawURLEncoding.EncodeToString(b), err
}

// attentionCursor decodes a Deliveries cursor, refusing one that is not a
// position in state's part of AttentionIndex.
func attentionCursor(c string, state delivery.State) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", ErrBadCursor
	}
	var lc listCursor
	if json.Unmarshal(b, &lc) != nil || lc.State != string(state) || !validDueKey(lc.After) {
		return "", ErrBadCursor
	}
	return lc.After, nil
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
		entered[k.Value] = (&decoder{item: e}).ms(attrSince)
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
