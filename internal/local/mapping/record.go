package mapping

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// Record is a stream record as Lambda hands it to the function: the
// record GetRecords returned, with the stream's ARN and the region.
func Record(r types.Record, streamARN, region string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if out.AWSRegion == "" {
		out.AWSRegion = region
	}
	if out.EventSource == "" {
		out.EventSource = "aws:dynamodb"
	}
	if r.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(r.UserIdentity.Type), PrincipalID: aws.ToString(r.UserIdentity.PrincipalId)}
	}
	sr := r.Dynamodb
	if sr == nil {
		return out, fmt.Errorf("mapping: record %s has no dynamodb part", out.EventID)
	}
	ch := events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(sr.SequenceNumber),
		SizeBytes:      aws.ToInt64(sr.SizeBytes),
		StreamViewType: string(sr.StreamViewType),
	}
	if sr.ApproximateCreationDateTime != nil {
		ch.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *sr.ApproximateCreationDateTime}
	}
	var err error
	if ch.Keys, err = image(sr.Keys); err != nil {
		return out, err
	}
	if ch.NewImage, err = image(sr.NewImage); err != nil {
		return out, err
	}
	if ch.OldImage, err = image(sr.OldImage); err != nil {
		return out, err
	}
	out.Change = ch
	return out, nil
}

func image(item map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if item == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		a, err := value(v)
		if err != nil {
			return nil, fmt.Errorf("mapping: attribute %s: %w", k, err)
		}
		out[k] = a
	}
	return out, nil
}

func value(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
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
			a, err := value(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			l[i] = a
		}
		return events.NewListAttribute(l), nil
	case *types.AttributeValueMemberM:
		m, err := image(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("attribute value %T", v)
}
