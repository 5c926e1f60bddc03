package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// scanned is a dynamo.API that sums what the store's Query answers say
// they read (ScannedCount) and returned, per index.
type scanned struct {
	*dynamodb.Client
	mu             sync.Mutex
	read, returned map[string]int
	queries        map[string]int
}

func newScanned(c *dynamodb.Client) *scanned {
	return &scanned{Client: c, read: map[string]int{}, returned: map[string]int{}, queries: map[string]int{}}
}

func (s *scanned) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := s.Client.Query(ctx, in, opts...)
	if err == nil {
		s.mu.Lock()
		idx := aws.ToString(in.IndexName)
		s.read[idx] += int(out.ScannedCount)
		s.returned[idx] += len(out.Items)
		s.queries[idx]++
		s.mu.Unlock()
	}
	return out, err
}

func (s *scanned) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.read)
	clear(s.returned)
	clear(s.queries)
}

// retries creates n tickets of alice whose first attempt failed and whose
// retry is scheduled at next(i), with the store's own writes (Create,
// then Lease and Finish, as the worker makes them), 16 at a time. It
// returns their ids in the order of i.
func (o *outbox) retries(n int, at time.Time, next func(i int) time.Time) []string {
	o.t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			id := ticket.NewID()
			key := fmt.Sprintf("%032x", i) + strings.ReplaceAll(id, "-", "")
			rec := idempotency.Record{
				Key: key, UserID: alice.ExternalID, Tenant: alice.Tenant, Function: ticket.CreateName,
				State: idempotency.Completed, Fingerprint: "fp", TicketID: id,
				Result: []byte(`{"status":"created"}`), CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
			}
			tk := ticket.Ticket{ID: id, Tenant: alice.Tenant, UserID: alice.ExternalID, Title: "Printer on fire", Priority: "high", CreatedAt: at, OperationKey: key}
			out := &delivery.Record{State: delivery.Queued, Destination: "webhook", Key: delivery.Key(key, id), Since: at, Version: 1}
			if _, _, err := o.store.Create(ctx, rec, tk, out); err != nil {
				errs <- err
				return
			}
			owner := "w-" + id[:8]
			_, r, err := o.store.Lease(ctx, id, delivery.Lease{Owner: owner, From: at, Until: at.Add(30 * time.Second)})
			if err != nil {
				errs <- err
				return
			}
			r.Attempts++
			r.LastCode, r.LastStatus, r.NextAt = "http_503", 503, next(i)
			if err := o.store.Finish(ctx, id, owner, r); err != nil {
				errs <- err
				return
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		o.t.Fatal(err)
	}
	return ids
}

// shardsOf counts the tickets of the table by the attention shard their
// item carries ("" for none).
func (o *outbox) shardsOf() map[string]int {
	o.t.Helper()
	n := map[string]int{}
	for _, it := range o.env.Items(o.t, "ticket") {
		k, _ := it["attn_shard"].(*types.AttributeValueMemberS)
		if k == nil {
			n[""]++
			continue
		}
		n[k.Value]++
	}
	return n
}

// TestScheduledRetriesSpreadAndTheSweepReadsOnlyWhatIsDue schedules 5,000
// retries, 300 of them due, the rest later, through the worker's own
// writes. They spread over every queued shard, none with more than 1.5
// times its even share (so no partition takes a state's writes); a pass
// of Due reads the 300 due entries and no other (ScannedCount, as the
// store reports it); and once all are due a pass stops at its bound,
// MaxDuePerPass, MaxDuePerShard from each shard, leaving the rest.
func TestScheduledRetriesSpreadAndTheSweepReadsOnlyWhatIsDue(t *testing.T) {
	const total, due = 5000, 300
	o := newOutbox(t)
	api := newScanned(o.env.Client)
	o.store = dynamo.New(api, o.env.Table)
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	now := at.Add(10 * time.Minute)
	ids := o.retries(total, at, func(i int) time.Time {
		if i < due {
			return now.Add(-time.Duration(i+1) * time.Second)
		}
		return now.Add(time.Duration(i) * time.Second)
	})

	shards := o.shardsOf()
	if len(shards) != dynamo.AttentionShards || shards[""] != 0 {
		t.Fatalf("the %d retries are listed on %d shards %v, want all on the %d queued shards", total, len(shards), shards, dynamo.AttentionShards)
	}
	most := 0
	for k, n := range shards {
		if !strings.HasPrefix(k, "queued#") {
			t.Errorf("shard %q", k)
		}
		most = max(most, n)
	}
	if fair := total / dynamo.AttentionShards; most > fair*3/2 {
		t.Errorf("one shard holds %d of %d retries, over 1.5 times its share %d: %v", most, total, fair, shards)
	}
	t.Logf("retries per shard: %v", shards)

	pass := func(now time.Time) []string {
		t.Helper()
		var got []string
		cursor := ""
		for calls := 0; ; calls++ {
			page, next, err := o.store.Due(context.Background(), now, cursor, delivery.SweepPage)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > delivery.SweepPage {
				t.Fatalf("a page of %d, asked %d", len(page), delivery.SweepPage)
			}
			got = append(got, page...)
			if next == "" {
				return got
			}
			if calls > total {
				t.Fatal("a pass that does not end")
			}
			cursor = next
		}
	}
	api.reset()
	o.env.Requests.Reset()
	got := pass(now)
	slices.Sort(got)
	want := slices.Clone(ids[:due])
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("a pass found %d due, want the %d due (of %d)", len(got), due, total)
	}
	if r := api.read[dynamo.AttentionIndex]; r != due {
		t.Errorf("the pass read %d index entries (ScannedCount), want the %d due: not-yet-due entries must not be read", r, due)
	}
	t.Logf("pass with %d of %d due: %d queries, %d entries read (ScannedCount), %.1f read units on %s (ConsumedCapacity)",
		due, total, api.queries[dynamo.AttentionIndex], api.read[dynamo.AttentionIndex], o.env.Requests.Capacity()["Query"].Indexes[dynamo.AttentionIndex].Read, dynamo.AttentionIndex)

	// All due: one pass is bounded, and takes its share of every shard.
	api.reset()
	o.env.Requests.Reset()
	later := now.Add(2 * time.Hour)
	got = pass(later)
	if r := api.read[dynamo.AttentionIndex]; r > dynamo.MaxDuePerPass || len(got) > dynamo.MaxDuePerPass {
		t.Errorf("with %d due, a pass read %d entries and returned %d; want at most MaxDuePerPass %d", total, r, len(got), dynamo.MaxDuePerPass)
	}
	perShard := map[string]int{}
	for _, id := range got {
		perShard[str(o.item(id), "attn_shard")]++
	}
	for k, n := range perShard {
		if n > dynamo.MaxDuePerShard {
			t.Errorf("shard %s gave %d in one pass, over MaxDuePerShard %d", k, n, dynamo.MaxDuePerShard)
		}
	}
	if len(perShard) != dynamo.AttentionShards || len(got) != dynamo.MaxDuePerPass {
		t.Errorf("with every shard over its bound, a pass gave %d from %d shards; want %d from each of %d", len(got), len(perShard), dynamo.MaxDuePerShard, dynamo.AttentionShards)
	}
	t.Logf("pass with all %d due: %d returned, %d queries, %d entries read (ScannedCount), %.1f read units on %s (ConsumedCapacity)",
		total, len(got), api.queries[dynamo.AttentionIndex], api.read[dynamo.AttentionIndex], o.env.Requests.Capacity()["Query"].Indexes[dynamo.AttentionIndex].Read, dynamo.AttentionIndex)

	// The backlog is counted without reading the whole index: at most
	// PendingPerShard per shard, and "at least" past it.
	api.reset()
	o.env.Requests.Reset()
	c, err := o.store.Pending(context.Background(), delivery.Queued)
	if err != nil {
		t.Fatal(err)
	}
	bound := dynamo.PendingPerShard * dynamo.AttentionShards
	if r := api.read[dynamo.AttentionIndex]; r > bound || c.N > bound || !c.AtLeast || c.N < bound/2 {
		t.Errorf("Pending(queued) of %d = %+v after reading %d entries; want at least %d-ish, AtLeast, reading at most %d", total, c, r, bound/2, bound)
	}
	if !c.Earliest.Equal(now.Add(-due * time.Second)) {
		t.Errorf("earliest due %v, want %v", c.Earliest, now.Add(-due*time.Second))
	}
	t.Logf("Pending(queued) of %d: %+v, %d queries, %d entries read (ScannedCount), %.1f read units (ConsumedCapacity)",
		total, c, api.queries[dynamo.AttentionIndex], api.read[dynamo.AttentionIndex], o.env.Requests.Capacity()["Query"].Indexes[dynamo.AttentionIndex].Read)
}

// TestPendingCountsExactlyUnderTheBound: a few entries are counted
// exactly, with the time the earliest entered the state.
func TestPendingCountsExactlyUnderTheBound(t *testing.T) {
	o := newOutbox(t)
	for i := range 5 {
		tk := o.ticket(alice, "r-pend", t1)
		o.move(tk.ID, delivery.Uncertain, t1.Add(time.Duration(5-i)*time.Minute))
	}
	c, err := o.store.Pending(context.Background(), delivery.Uncertain)
	if err != nil || c.N != 5 || c.AtLeast || !c.Earliest.Equal(t1.Add(time.Minute)) {
		t.Errorf("Pending(uncertain) = %+v, %v; want exactly 5, the earliest entered at %v", c, err, t1.Add(time.Minute))
	}
	if c, err := o.store.Pending(context.Background(), delivery.Failed); err != nil || c != (delivery.Count{}) {
		t.Errorf("Pending(failed) = %+v, %v; want none", c, err)
	}
}

// TestDeliveriesAcrossShards lists 120 uncertain tickets, spread over the
// shards, a page of 7 at a time: every one once, oldest first across the
// shards; with a tenant and an age; and a cursor of another state or
// tampered with is refused.
func TestDeliveriesAcrossShards(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	var all, alices, old []string // oldest first
	type entered struct {
		id string
		at time.Time
	}
	var es []entered
	for i := range 120 {
		u := alice
		if i%3 == 0 {
			u = carol
		}
		tk := o.ticket(u, "r-x", t1)
		at := t1.Add(time.Duration((i*37)%120) * time.Minute) // entered in another order than created
		o.move(tk.ID, delivery.Uncertain, at)
		es = append(es, entered{tk.ID, at})
		if u.Tenant == alice.Tenant {
			alices = append(alices, tk.ID)
		}
	}
	slices.SortFunc(es, func(a, b entered) int { return a.at.Compare(b.at) })
	for _, e := range es {
		all = append(all, e.id)
		if !e.at.After(t1.Add(30 * time.Minute)) {
			old = append(old, e.id)
		}
	}
	alices = slices.DeleteFunc(slices.Clone(all), func(id string) bool { return !slices.Contains(alices, id) })
	if n := len(o.shardsOf()); n < dynamo.AttentionShards/2 {
		t.Fatalf("the tickets are listed on %d shards, want them spread", n)
	}

	list := func(q dynamo.DeliveryQuery) []string {
		t.Helper()
		var got []string
		for pages := 0; ; pages++ {
			page, err := o.admin.Deliveries(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Deliveries) > q.Limit {
				t.Fatalf("a page of %d, limit %d", len(page.Deliveries), q.Limit)
			}
			for _, d := range page.Deliveries {
				got = append(got, d.TicketID)
			}
			if page.Next == "" {
				return got
			}
			if pages > 200 {
				t.Fatal("no last page")
			}
			q.After = page.Next
		}
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 7}); !slices.Equal(got, all) {
		t.Errorf("pages of 7: %d listed, want the %d oldest first, once each", len(got), len(all))
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 1000}); !slices.Equal(got, all) {
		t.Errorf("one page: %d listed, want %d oldest first", len(got), len(all))
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, Tenant: alice.Tenant, Limit: 5}); !slices.Equal(got, alices) {
		t.Errorf("tenant-a, pages of 5: %d listed, want %d", len(got), len(alices))
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, EnteredBefore: t1.Add(30 * time.Minute), Limit: 4}); !slices.Equal(got, old) {
		t.Errorf("entered by t1+30m, pages of 4: %d listed, want %d", len(got), len(old))
	}

	page, err := o.admin.Deliveries(ctx, dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 7})
	if err != nil || page.Next == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	for _, bad := range []string{page.Next[:len(page.Next)-2], "eyJzIjoidW5jZXJ0YWluIiwiYSI6IngifQ"} { // cut; {"s":"uncertain","a":"x"}
		if _, err := o.admin.Deliveries(ctx, dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 7, After: bad}); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
	if _, err := o.admin.Deliveries(ctx, dynamo.DeliveryQuery{State: delivery.Failed, Limit: 7, After: page.Next}); err == nil {
		t.Error("an uncertain cursor accepted for failed")
	}
}

// TestRelistMovesEntriesOfTheEarlierIndex: a ticket listed as the
// versions before the shards listed it (attn, attn_at) is seen neither
// by Due nor by Stranded; Relist moves it into AttentionIndex, where Due
// finds it, and out of the earlier one.
func TestRelistMovesEntriesOfTheEarlierIndex(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	ids := o.retries(3, at, func(int) time.Time { return at.Add(time.Minute) })
	stuck := o.ticket(alice, "r-u", at)
	o.move(stuck.ID, delivery.Uncertain, at)
	for _, id := range append(slices.Clone(ids), stuck.ID) {
		d := o.delivery(id)
		if _, err := o.env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(o.env.Table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ticket#" + id}},
			UpdateExpression: aws.String("SET attn = :s, attn_at = :at REMOVE attn_shard, attn_due"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":s": &types.AttributeValueMemberS{Value: string(d.State)}, ":at": &types.AttributeValueMemberS{Value: d.Since.Format("2006-01-02T15:04:05.000000000Z")},
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if due, _, err := o.store.Due(ctx, time.Now(), "", 100); err != nil || len(due) != 0 {
		t.Fatalf("Due before relisting = %v, %v; want none (the earlier index is not read)", due, err)
	}
	if s, err := o.admin.Stranded(ctx, time.Now(), time.Now()); err != nil || len(s) != 0 {
		t.Fatalf("Stranded = %v, %v; want none: a ticket in the earlier index is not stranded", s, err)
	}
	n, err := o.store.Relist(ctx)
	if err != nil || n != 4 {
		t.Fatalf("Relist = %d, %v; want 4", n, err)
	}
	due, _, err := o.store.Due(ctx, time.Now(), "", 100)
	slices.Sort(due)
	slices.Sort(ids)
	if err != nil || !slices.Equal(due, ids) {
		t.Errorf("Due after relisting = %v, %v; want %v", due, err, ids)
	}
	if c, err := o.store.Pending(ctx, delivery.Uncertain); err != nil || c.N != 1 {
		t.Errorf("Pending(uncertain) after relisting = %+v, %v", c, err)
	}
	for _, id := range append(ids, stuck.ID) {
		it := o.item(id)
		if _, ok := it["attn"]; ok {
			t.Errorf("%s keeps its entry of the earlier index", id)
		}
	}
	if n, err := o.store.Relist(ctx); err != nil || n != 0 {
		t.Errorf("a second Relist = %d, %v; want nothing left", n, err)
	}
}

// TestRelistWithoutTheEarlierIndex: on a table that never had the earlier
// attention index (or whose operator deleted it once empty), Relist has
// nothing to move and is no error.
func TestRelistWithoutTheEarlierIndex(t *testing.T) {
	env := dynamotest.New(t)
	table := env.Table + "-x"
	in := dynamo.CreateTableInput(table)
	in.GlobalSecondaryIndexes = slices.DeleteFunc(in.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndex) bool {
		return aws.ToString(g.IndexName) == dynamo.LegacyAttentionIndex
	})
	in.AttributeDefinitions = slices.DeleteFunc(in.AttributeDefinitions, func(a types.AttributeDefinition) bool {
		n := aws.ToString(a.AttributeName)
		return n == "attn" || n == "attn_at"
	})
	ctx := context.Background()
	if _, err := env.Client.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })
	if n, err := dynamo.New(env.Client, table).Relist(ctx); err != nil || n != 0 {
		t.Errorf("Relist = %d, %v; want nothing and no error", n, err)
	}
}
