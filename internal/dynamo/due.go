package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Bounds of the reads of AttentionIndex the sweep makes.
const (
	// MaxDuePerShard bounds the entries one pass of Due (from cursor ""
	// until next is "") reads from one shard, so that a pass reads at most
	// MaxDuePerPass entries however many are due; what is left waits for
	// the next pass, which begins at another shard.
	MaxDuePerShard = 64
	// MaxDuePerPass is MaxDuePerShard for every shard.
	MaxDuePerPass = MaxDuePerShard * AttentionShards
	// PendingPerShard bounds the entries Pending reads from one shard:
	// past it a shard's count stops, and Pending says "at least".
	PendingPerShard = 250
	// MaxRelistPerCall bounds the LegacyAttentionIndex entries one Relist
	// moves.
	MaxRelistPerCall = 500
	// maxPage bounds the items one index query returns.
	maxPage = 1000
)

// dueCursor is a position in one pass of Due: the shard the pass began
// with, how many shards it finished, and how far into the current one it
// is.
type dueCursor struct {
	First int               `json:"f"`
	Done  int               `json:"d"`
	Read  int               `json:"n"`
	Key   map[string]string `json:"k,omitempty"`
}

func (c dueCursor) encode() (string, error) {
	if c.Done >= AttentionShards {
		return "", nil
	}
	b, err := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b), err
}

// decodeDueCursor decodes a Due cursor; "" begins a pass at a shard that
// changes every minute, so that when passes stop at their bound every
// shard is read first in turn.
func decodeDueCursor(s string, now time.Time) (dueCursor, error) {
	if s == "" {
		return dueCursor{First: int(now.Unix() / 60 % AttentionShards)}, nil
	}
	var c dueCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil ||
		c.First < 0 || c.First >= AttentionShards || c.Done < 0 || c.Done >= AttentionShards || c.Read < 0 || c.Read >= MaxDuePerShard {
		return dueCursor{}, ErrBadCursor
	}
	return c, nil
}

// Due implements delivery.Store: a Query of each queued shard of
// AttentionIndex for the key range due by now (sort key up to now), one
// shard after another; not-yet-due entries are not read.
func (s *Store) Due(ctx context.Context, now time.Time, cursor string, limit int) ([]string, string, error) {
	c, err := decodeDueCursor(cursor, now)
	if err != nil {
		return nil, "", err
	}
	if limit < 1 || limit > maxPage {
		limit = maxPage
	}
	var ids []string
	for c.Done < AttentionShards && len(ids) < limit {
		shard := (c.First + c.Done) % AttentionShards
		var start map[string]types.AttributeValue
		if len(c.Key) > 0 {
			start = make(map[string]types.AttributeValue, len(c.Key))
			for k, v := range c.Key {
				start[k] = strAV(v)
			}
		}
		in := &dynamodb.QueryInput{
			TableName:                 &s.table,
			IndexName:                 aws.String(AttentionIndex),
			KeyConditionExpression:    aws.String("#ash = :sh AND #adue <= :end"),
			ProjectionExpression:      aws.String("#pk"),
			ExpressionAttributeNames:  map[string]string{"#ash": attrAttention, "#adue": attrAttentionDue, "#pk": PartitionKey},
			ExpressionAttributeValues: map[string]types.AttributeValue{":sh": strAV(shardKey(delivery.Queued, shard)), ":end": strAV(dueKeyEnd(now))},
			Limit:                     aws.Int32(int32(min(limit-len(ids), MaxDuePerShard-c.Read))), // #nosec G115 -- at most MaxDuePerShard
			ExclusiveStartKey:         start,
		}
		var out *dynamodb.QueryOutput
		err = s.retry(ctx, func() (err error) {
			out, err = s.api.Query(ctx, in)
			return err
		})
		if err != nil {
			return nil, "", err
		}
		for _, item := range out.Items {
			if id := ticketIDOf(item); id != "" {
				ids = append(ids, id)
			}
		}
		c.Read += max(int(out.ScannedCount), len(out.Items))
		c.Key = nil
		if len(out.LastEvaluatedKey) == 0 || c.Read >= MaxDuePerShard {
			c.Done, c.Read = c.Done+1, 0
		} else if c.Key, err = stringKey(out.LastEvaluatedKey); err != nil {
			return nil, "", err
		}
	}
	next, err := c.encode()
	return ids, next, err
}

// stringKey is a LastEvaluatedKey of string attributes as strings.
func stringKey(key map[string]types.AttributeValue) (map[string]string, error) {
	m := make(map[string]string, len(key))
	for k, v := range key {
		sv, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return nil, errors.New("dynamo: page key " + k + " is not a string")
		}
		m[k] = sv.Value
	}
	return m, nil
}

// Pending implements delivery.Store: one Query of each shard of st in
// AttentionIndex, of at most PendingPerShard entries (keys only in the
// answer, though DynamoDB bills the entries read). A shard with more stops
// there, and the count says AtLeast. Earliest is the first position of
// the shards' answers (each begins at its shard's earliest entry).
func (s *Store) Pending(ctx context.Context, st delivery.State) (delivery.Count, error) {
	var c delivery.Count
	for shard := range AttentionShards {
		in := &dynamodb.QueryInput{
			TableName:                 &s.table,
			IndexName:                 aws.String(AttentionIndex),
			KeyConditionExpression:    aws.String("#ash = :sh"),
			ProjectionExpression:      aws.String("#adue"),
			ExpressionAttributeNames:  map[string]string{"#ash": attrAttention, "#adue": attrAttentionDue},
			ExpressionAttributeValues: map[string]types.AttributeValue{":sh": strAV(shardKey(st, shard))},
			Limit:                     aws.Int32(PendingPerShard),
		}
		var out *dynamodb.QueryOutput
		err := s.retry(ctx, func() (err error) {
			out, err = s.api.Query(ctx, in)
			return err
		})
		if err != nil {
			return delivery.Count{}, err
		}
		c.N += len(out.Items)
		c.AtLeast = c.AtLeast || len(out.LastEvaluatedKey) > 0
		if len(out.Items) > 0 {
			k, _ := out.Items[0][attrAttentionDue].(*types.AttributeValueMemberS)
			if k != nil {
				if t := dueTime(k.Value); !t.IsZero() && (c.Earliest.IsZero() || t.Before(c.Earliest)) {
					c.Earliest = t
				}
			}
		}
	}
	return c, nil
}

// Relist implements delivery.Relister: it moves up to MaxRelistPerCall
// entries of LegacyAttentionIndex, oldest first per state, into
// AttentionIndex, each with one UpdateItem conditional on the entry being
// as the index showed it (a delivery changed since is listed anew by the
// change). A table without LegacyAttentionIndex has nothing to move.
func (s *Store) Relist(ctx context.Context) (int, error) {
	moved := 0
	for _, st := range Listed {
		if moved >= MaxRelistPerCall {
			break
		}
		in := &dynamodb.QueryInput{
			TableName:                 &s.table,
			IndexName:                 aws.String(LegacyAttentionIndex),
			KeyConditionExpression:    aws.String("#attn = :s"),
			ProjectionExpression:      aws.String("#pk, #attnat, #na"),
			ExpressionAttributeNames:  map[string]string{"#attn": attrLegacyAttention, "#attnat": attrLegacyAttentionAt, "#na": attrNextAt, "#pk": PartitionKey},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": strAV(string(st))},
			Limit:                     aws.Int32(int32(MaxRelistPerCall - moved)), // #nosec G115 -- at most MaxRelistPerCall
		}
		var out *dynamodb.QueryOutput
		err := s.retry(ctx, func() (err error) {
			out, err = s.api.Query(ctx, in)
			return err
		})
		if noIndex(err) {
			return moved, nil
		}
		if err != nil {
			return moved, err
		}
		for _, item := range out.Items {
			ok, err := s.relistOne(ctx, st, item)
			if err != nil {
				return moved, err
			}
			if ok {
				moved++
			}
		}
	}
	return moved, nil
}

// relistOne moves one LegacyAttentionIndex entry of state st; false when
// the ticket changed since the index showed it.
func (s *Store) relistOne(ctx context.Context, st delivery.State, entry map[string]types.AttributeValue) (bool, error) {
	id := ticketIDOf(entry)
	d := &decoder{item: entry}
	at := d.str(attrLegacyAttentionAt, false)
	if id == "" || at == "" {
		return false, nil
	}
	entered, err := time.Parse(indexTimeLayout, at)
	if err != nil {
		return false, nil
	}
	r := &delivery.Record{State: st, Since: entered, NextAt: d.ms(attrNextAt)}
	if st == delivery.Queued && r.NextAt.IsZero() {
		r.NextAt = entered
	}
	shard, key, ok := attentionEntry(id, r)
	if !ok {
		return false, nil
	}
	err = s.retry(ctx, func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: ticketKey(id),
			ConditionExpression: aws.String("#d = :s AND #attn = :s AND #attnat = :at"),
			UpdateExpression:    aws.String("SET #ash = :ash, #adue = :adue REMOVE #attn, #attnat"),
			ExpressionAttributeNames: map[string]string{
				"#d": attrDelivery, "#attn": attrLegacyAttention, "#attnat": attrLegacyAttentionAt,
				"#ash": attrAttention, "#adue": attrAttentionDue,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":s": strAV(string(st)), ":at": strAV(at), ":ash": strAV(shard), ":adue": strAV(key),
			},
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
}

// noIndex reports whether err is the store's refusal of a query of an
// index the table does not have.
func noIndex(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(strings.ToLower(ae.ErrorMessage()), "index")
}
