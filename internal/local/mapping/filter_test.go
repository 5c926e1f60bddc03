package mapping_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/local/mapping"
)

func TestMatchFilter(t *testing.T) {
	const pattern = `{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"delivery": {"S": ["queued"]}}}}`
	for _, tc := range []struct {
		name, event string
		want        bool
	}{
		{"queued insert", `{"eventName":"INSERT","dynamodb":{"NewImage":{"delivery":{"S":"queued"},"pk":{"S":"ticket#1"}}}}`, true},
		{"modify", `{"eventName":"MODIFY","dynamodb":{"NewImage":{"delivery":{"S":"queued"}}}}`, false},
		{"delivered insert", `{"eventName":"INSERT","dynamodb":{"NewImage":{"delivery":{"S":"delivered"}}}}`, false},
		{"no delivery attribute", `{"eventName":"INSERT","dynamodb":{"NewImage":{"pk":{"S":"user#a"}}}}`, false},
		{"no image", `{"eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"ticket#1"}}}}`, false},
		{"a number, not a string", `{"eventName":"INSERT","dynamodb":{"NewImage":{"delivery":{"N":"queued"}}}}`, false},
		{"value in a list", `{"eventName":["REMOVE","INSERT"],"dynamodb":{"NewImage":{"delivery":{"S":"queued"}}}}`, true},
	} {
		got, err := mapping.MatchFilter(pattern, []byte(tc.event))
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	// exists
	got, err := mapping.MatchFilter(`{"dynamodb": {"NewImage": {"attn": [{"exists": false}]}}}`, []byte(`{"dynamodb":{"NewImage":{}}}`))
	if err != nil || !got {
		t.Errorf("exists:false on a missing attribute: %v %v", got, err)
	}
	got, err = mapping.MatchFilter(`{"dynamodb": {"NewImage": {"attn": [{"exists": true}]}}}`, []byte(`{"dynamodb":{"NewImage":{}}}`))
	if err != nil || got {
		t.Errorf("exists:true on a missing attribute: %v %v", got, err)
	}
	// What it cannot judge is an error, never an answer.
	for _, p := range []string{
		`{"eventName": [{"prefix": "INS"}]}`,
		`{"eventName": [{"anything-but": "REMOVE"}]}`,
		`{"eventName": "INSERT"}`,
		`{}`,
		`[1]`,
	} {
		if _, err := mapping.MatchFilter(p, []byte(`{"eventName":"INSERT"}`)); err == nil {
			t.Errorf("pattern %s judged", p)
		}
	}
}
