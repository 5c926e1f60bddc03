package samtest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StreamImage is item as a DynamoDB stream record carries it (the SDK's
// attribute values in the stream's JSON form).
func StreamImage(item map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		a, err := streamValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = a
	}
	return out, nil
}

func streamValue(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(x.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(x.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(x.Value), nil
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, e := range x.Value {
			a, err := streamValue(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			l[i] = a
		}
		return events.NewListAttribute(l), nil
	case *types.AttributeValueMemberM:
		m, err := StreamImage(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("attribute value %T", v)
}

// StreamRecord is the record a table's stream with StreamViewType NEW_IMAGE
// gives Lambda for a write of item (eventName INSERT or MODIFY; REMOVE
// records carry the key only). seq is its sequence number, the identifier a
// partial batch response names.
func StreamRecord(eventName, seq, streamARN string, at time.Time, item map[string]types.AttributeValue) (events.DynamoDBEventRecord, error) {
	img, err := StreamImage(item)
	if err != nil {
		return events.DynamoDBEventRecord{}, err
	}
	pk, ok := img["pk"]
	if !ok {
		return events.DynamoDBEventRecord{}, fmt.Errorf("item has no pk")
	}
	ch := events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
		Keys:                        map[string]events.DynamoDBAttributeValue{"pk": pk},
		SequenceNumber:              seq,
		StreamViewType:              "NEW_IMAGE",
	}
	if eventName != "REMOVE" {
		ch.NewImage = img
	}
	// The record's size as DynamoDB states it is the keys' and images'
	// bytes; their JSON length is near enough for a sample event.
	keys, _ := json.Marshal(ch.Keys)
	image, _ := json.Marshal(ch.NewImage)
	ch.SizeBytes = int64(len(keys) + len(image))
	return events.DynamoDBEventRecord{
		AWSRegion:      "eu-west-1",
		Change:         ch,
		EventID:        strconv.FormatUint(fnv(seq), 16),
		EventName:      eventName,
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: streamARN,
	}, nil
}

// fnv hashes s into a stable event id.
func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
