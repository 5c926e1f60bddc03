package localdb

import (
	"encoding/json"
	"strings"
)

// CurrentItem reads the item with partition key pk ("pk" attribute, in its
// DynamoDB JSON form) from table, or returns nil when there is none.
type CurrentItem func(table string, pk json.RawMessage) json.RawMessage

// returning is the part of a write action that asks for the old item.
type returning struct {
	TableName                           string
	Item                                map[string]json.RawMessage
	Key                                 map[string]json.RawMessage
	ReturnValuesOnConditionCheckFailure string
}

// key is the partition key of the item the action names, when it asked for
// ALL_OLD.
func (a *returning) key() json.RawMessage {
	if a == nil || a.ReturnValuesOnConditionCheckFailure != "ALL_OLD" {
		return nil
	}
	if k := a.Key["pk"]; k != nil {
		return k
	}
	return a.Item["pk"]
}

// FillOldItems makes a failed answer of the embedded store read as
// DynamoDB's would: every ConditionalCheckFailed (a cancellation reason of
// TransactWriteItems, or a failed PutItem, UpdateItem or DeleteItem) whose
// action asked for ReturnValuesOnConditionCheckFailure=ALL_OLD gets the
// current item, read with current. minidyn omits it for Put. op is the
// operation name (the X-Amz-Target suffix); respBody is returned unchanged
// when there is nothing to fill.
func FillOldItems(op string, reqBody, respBody []byte, current CurrentItem) []byte {
	var resp map[string]any
	if json.Unmarshal(respBody, &resp) != nil {
		return respBody
	}
	changed := false
	fill := func(into map[string]any, a *returning) {
		if k := a.key(); k != nil {
			if item := current(a.TableName, k); item != nil {
				into["Item"] = item
				changed = true
			}
		}
	}
	switch op {
	case "TransactWriteItems":
		var req struct {
			TransactItems []struct {
				Put, ConditionCheck, Update, Delete *returning
			}
		}
		if json.Unmarshal(reqBody, &req) != nil {
			return respBody
		}
		reasons, _ := resp["CancellationReasons"].([]any)
		for i, raw := range reasons {
			reason, _ := raw.(map[string]any)
			if reason == nil || reason["Code"] != "ConditionalCheckFailed" || reason["Item"] != nil || i >= len(req.TransactItems) {
				continue
			}
			it := req.TransactItems[i]
			for _, a := range []*returning{it.Put, it.ConditionCheck, it.Update, it.Delete} {
				fill(reason, a)
			}
		}
	case "PutItem", "UpdateItem", "DeleteItem":
		typ, _ := resp["__type"].(string)
		if !strings.HasSuffix(typ, "ConditionalCheckFailedException") || resp["Item"] != nil {
			return respBody
		}
		var a returning
		if json.Unmarshal(reqBody, &a) != nil {
			return respBody
		}
		fill(resp, &a)
	}
	if !changed {
		return respBody
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return respBody
	}
	return b
}
