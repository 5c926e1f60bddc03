package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestSweepRelistsWhatAnEarlierVersionListed: a retry scheduled by a
// version before the attention index was sharded (listed under attn and
// attn_at only) is taken up by the sweep after the upgrade, and the
// backlog's age is how long the retry has been due.
func TestSweepRelistsWhatAnEarlierVersionListed(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{throttled, created}
	id := r.ticket()
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeRetried {
		t.Fatal(rep)
	}
	rec := r.record(id)
	if _, err := r.env.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(r.env.Table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ticket#" + id}},
		UpdateExpression: aws.String("SET attn = :q, attn_at = :at REMOVE attn_shard, attn_due"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":q": &types.AttributeValueMemberS{Value: "queued"}, ":at": &types.AttributeValueMemberS{Value: rec.Since.Format("2006-01-02T15:04:05.000000000Z")},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if r.pending(delivery.Queued) != 0 {
		t.Fatal("the earlier index's entry is counted before it is relisted")
	}
	overdue := 10 * time.Minute
	r.advance(rec.NextAt.Sub(r.clock()) + overdue)
	r.dest.creates = []delivery.Result{throttled, created}
	// Held by nothing, due: the first sweep relists it and attempts it
	// (throttled again); the backlog then shows it scheduled.
	sw, err := r.w.Sweep(context.Background())
	if err != nil || sw.Due != 1 || sw.Outcomes[delivery.OutcomeRetried] != 1 || sw.Backlog.Queued != 1 {
		t.Fatalf("first sweep after the upgrade: %+v, %v; want the relisted retry attempted", sw, err)
	}
	next := r.record(id).NextAt
	r.advance(next.Sub(r.clock()) + overdue)
	// Measured before the sweep's attempt: a second worker's view.
	c, err := r.store.Pending(context.Background(), delivery.Queued)
	if err != nil || c.N != 1 || !c.Earliest.Equal(next) {
		t.Fatalf("Pending = %+v, %v; want the retry due at %v", c, err, next)
	}
	sw, err = r.w.Sweep(context.Background())
	if err != nil || sw.Outcomes[delivery.OutcomeDelivered] != 1 || sw.Backlog.Queued != 0 || sw.Backlog.OldestQueued != 0 {
		t.Fatalf("second sweep: %+v, %v; want delivered", sw, err)
	}
}

// TestBacklogAgeIsHowLongARetryHasBeenDue: when a due retry is not taken
// up (here a sweep whose store finds nothing due, as one that cannot keep
// up), the backlog's age is the time since the earliest retry became due.
func TestBacklogAgeIsHowLongARetryHasBeenDue(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{throttled}
	id := r.ticket()
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeRetried {
		t.Fatal(rep)
	}
	next := r.record(id).NextAt
	r.advance(next.Sub(r.clock()) + 7*time.Minute)
	w := *r.w
	w.Store = behind{r.store}
	obs := &backlogs{}
	w.Metrics = obs
	sw, err := w.Sweep(context.Background())
	if err != nil || len(obs.got) != 1 {
		t.Fatalf("sweep %+v, %v; backlogs %v", sw, err, obs.got)
	}
	if b := obs.got[0]; b.Queued != 1 || b.OldestQueued != 7*time.Minute || b.AtLeast {
		t.Errorf("backlog %+v; want 1 queued, due for 7m", b)
	}
}

// behind is a store whose sweep finds nothing due.
type behind struct{ *dynamo.Store }

func (behind) Due(context.Context, time.Time, string, int) ([]string, string, error) {
	return nil, "", nil
}

type backlogs struct{ got []delivery.Backlog }

func (o *backlogs) Attempt(string, int, time.Duration, time.Duration, bool) {}
func (o *backlogs) Backlog(b delivery.Backlog)                              { o.got = append(o.got, b) }
