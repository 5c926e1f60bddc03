package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
)

// RecoverNote is the audit note of a rescheduled stranded delivery.
const RecoverNote = "stranded: queued with no attempt scheduled and no live lease; listed for the sweep, due now"

// ActionRecover is the audit action of Reschedule.
const ActionRecover = "recover"

// strandedCondition selects a delivery no sweep would take up: queued, not
// listed in AttentionIndex nor in LegacyAttentionIndex (whose entries the
// sweep relists), held by no live lease.
var strandedCondition = queuedCondition(":queued") + " AND attribute_not_exists(#ash) AND attribute_not_exists(#attn) AND (attribute_not_exists(#lu) OR #lu < :now)"

// Stranded returns the ids of tickets whose delivery has been queued since
// before before and that no sweep will take up (see strandedCondition): a
// first attempt the stream path never made (its record went to the
// on-failure queue, or aged out of the stream), or one whose worker died
// before the stream retried it. Finding them takes a Scan of the whole
// table, billed by its size: it is a recovery for when the on-failure
// queue or the iterator-age alarm fired, not a routine.
func (a *Admin) Stranded(ctx context.Context, before, now time.Time) ([]string, error) {
	var ids []string
	var start map[string]types.AttributeValue
	for {
		in := &dynamodb.ScanInput{
			TableName:            aws.String(a.table),
			ConsistentRead:       aws.Bool(true),
			FilterExpression:     aws.String(strandedCondition + " AND #since < :before"),
			ProjectionExpression: aws.String("#pk"),
			ExpressionAttributeNames: map[string]string{
				"#pk": PartitionKey, "#d": attrDelivery, "#att": attrAttempts, "#ash": attrAttention, "#attn": attrLegacyAttention, "#lu": attrLeaseUntil, "#since": attrSince,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":queued": strAV(string(delivery.Queued)), ":now": msAV(now), ":before": msAV(before),
			},
			ExclusiveStartKey: start,
		}
		var out *dynamodb.ScanOutput
		err := a.store.retry(ctx, func() (err error) {
			out, err = a.api.Scan(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, item := range out.Items {
			if id := ticketIDOf(item); id != "" {
				ids = append(ids, id)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return ids, nil
		}
		start = out.LastEvaluatedKey
	}
}

// Reschedule lists the stranded delivery of ticket id in AttentionIndex, due at now, so that the next sweep attempts it, and audits who did
// it (by.Who is required). It changes nothing and returns an error
// matching ErrConflict when the delivery is no longer stranded (delivered,
// scheduled or leased since).
func (a *Admin) Reschedule(ctx context.Context, id string, by delivery.Actor, now time.Time) error {
	if by.Who == "" {
		return errors.New("dynamo: a reschedule needs to know who makes it")
	}
	now = now.UTC().Truncate(time.Millisecond)
	d := delivery.Decision{Actor: by, At: now, Action: ActionRecover, From: delivery.Queued, To: delivery.Queued, Note: RecoverNote}
	var err error
	if d.Proof, err = a.prove(ctx, id, d); err != nil {
		return err
	}
	entry := auditEntry(d)
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(a.table), Key: ticketKey(id),
		ConditionExpression: aws.String(strandedCondition),
		UpdateExpression:    aws.String("SET #ash = :ash, #adue = :adue, #na = :now, #dv = #dv + :one, #audit = list_append(if_not_exists(#audit, :empty), :entry)"),
		ExpressionAttributeNames: map[string]string{
			"#d": attrDelivery, "#att": attrAttempts, "#ash": attrAttention, "#adue": attrAttentionDue, "#attn": attrLegacyAttention, "#lu": attrLeaseUntil,
			"#na": attrNextAt, "#dv": attrVersion, "#audit": attrAudit,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":queued": strAV(string(delivery.Queued)), ":now": msAV(now), ":one": numAV(1),
			":ash": strAV(shardKey(delivery.Queued, attentionShard(id))), ":adue": strAV(dueKey(now, id)),
			":empty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			":entry": &types.AttributeValueMemberL{Value: []types.AttributeValue{entry}},
		},
	}
	err = a.store.retry(ctx, func() error {
		_, err := a.api.UpdateItem(ctx, in)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return errNotStranded
	}
	return err
}

// errNotStranded is Reschedule's refusal.
var errNotStranded = &conflictError{msg: "the delivery is no longer stranded: it was delivered, scheduled or leased since it was listed"}

// conflictError is a refusal that matches ErrConflict.
type conflictError struct{ msg string }

func (c *conflictError) Error() string        { return c.msg }
func (c *conflictError) Is(target error) bool { return target == ErrConflict }
